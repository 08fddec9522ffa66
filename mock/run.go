package mock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/internal/linkconf"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/syncwriter"
	"github.com/ahp-tap/ahp-tap/internal/viewserve"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/tap"
)

// closeBound bounds the flushing of a mock's log at its end.
const closeBound = 10 * time.Second

// Config is `ahp-tap mock backend|harness` once its flags are read: the
// recording to play and the audit of the traffic.
type Config struct {
	// Name is the command, "mock backend" or "mock harness": it starts
	// every line.
	Name string
	// Version is ahp-tap's version, for the live view.
	Version string
	// Capture is the recording's file; AllowRedacted uses one whose
	// bodies hold redacted credentials.
	Capture       string
	AllowRedacted bool
	// Match and Ignore say how requests match and answers compare.
	Match  Match
	Ignore []Pointer
	// Threshold fails the run on a finding at or above it (0: never).
	Threshold tap.Level
	// Link is what the flags resolved to; Overrides which of them replace
	// the recording's settings.
	Link      *linkconf.Loaded
	Overrides capture.Overrides
	// Transport and Conn are the audited link's.
	Transport tap.Transport
	Conn      string
	// Log is --log ("": none); Quiet leaves out each finding's line; UI
	// is --ui ("": none, loopback only).
	Log   string
	Quiet bool
	UI    string
	// Stderr gets the peer's lines and findings, Diag ahp-tap's notices.
	Stderr, Diag io.Writer
}

// A Run is one mock peer with its audit and its way out (package output:
// each finding a line on stderr, --log, --ui).
type Run struct {
	Peer
	name      string
	threshold tap.Level
	out       *output.Output
	ui        *viewserve.Live
	audit     httpaudit.Builder
}

// Open reads the recording and builds the audit session. Its errors are
// one line each, an exit status 2 for the command.
func Open(c Config) (*Run, error) {
	f, err := os.Open(c.Capture)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", c.Name, err)
	}
	rec, err := Load(f, c.AllowRedacted) // f stays open: the recording reads its frames from it
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %s: %v", c.Name, c.Capture, err)
	}
	cfg, err := rec.Header.Config(c.Link.Config, c.Overrides)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", c.Name, c.Capture, err)
	}
	cfg.Transport = c.Transport
	r := &Run{name: c.Name, threshold: c.Threshold}
	r.Peer = Peer{Rec: rec, Match: c.Match, Ignore: c.Ignore, Diag: syncwriter.New(c.Stderr), Audit: &r.audit}
	// The way out (package output): each finding a line on stderr, its
	// credentials redacted as the audit copies are, and --log.
	oc := output.Config{Name: c.Name, Diag: c.Stderr, Log: c.Log, Redact: r.audit.Text}
	if !c.Quiet {
		oc.Plain, oc.PlainPrefix = r.Diag, "ahp-tap "+c.Name+" ▸ "
	}
	if r.ui, err = viewserve.OpenLive(c.Name, c.UI, false, c.Version, cfg.Snapshot, c.Diag); err != nil {
		return nil, err
	}
	oc.View = r.ui.View() // the live view, fed as the taps' is
	if r.out, err = output.Open(oc); err != nil {
		r.ui.Close()
		return nil, fmt.Errorf("%s: %v", c.Name, err)
	}
	r.ui.Serve()
	// A line's audit copy is capped as the stdio tap's.
	r.Session = c.Link.NewSession(r.out.SessionConfig(tap.SessionConfig{Config: cfg, Conn: c.Conn, MaxLine: MaxBody}))
	return r, nil
}

// Finish closes the audit, prints the summary line and says whether the
// run failed: the mock failed its job (res.Failures > 0) or a finding at
// or above the threshold exists. err (the peer's own) is returned as it
// is, a backend that did not start as a one-line error.
func (r *Run) Finish(res Result, err error) (failed bool, _ error) {
	r.Session.Close()
	if cerr := r.out.Close(time.Now().Add(closeBound)); cerr != nil {
		printable.Fprintf(r.Diag, "ahp-tap %s: %v\n", r.name, cerr)
	}
	r.ui.Close()
	var se *StartError
	if errors.As(err, &se) {
		return false, fmt.Errorf("%s: %v", r.name, se)
	}
	if err != nil {
		return false, err
	}
	lc := r.out.Levels()
	printable.Fprintf(r.Diag, "ahp-tap %s: %s; audit: %d findings (%d error, %d warn, %d info)\n",
		r.name, res.What, lc.Total(), lc.Error, lc.Warn, lc.Info)
	return res.Failures > 0 || (r.threshold > 0 && lc.AtLeast(r.threshold) > 0), nil
}
