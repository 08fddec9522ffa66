package stdiotap

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/conduct/live"
	"github.com/ahp-tap/ahp-tap/inject"
	tapmetrics "github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/viewserve"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A linkRun is one wrapped backend, or one link of an audit process, with
// its way out.
type linkRun struct {
	c       *Config
	tap     *stdio.Tap      // the forwarding process's tap (nil in an audit process)
	session *tap.Session    // nil with --audit=false
	out     *output.Output  // nil in a forwarding process whose audit is elsewhere
	audit   *auditlink.Link // the audit process, when auditing happens there
	conn    string          // the link's name
	diag    io.Writer       // ahp-tap's own one-line notices (stderr)
	closed  bool
}

// aids are the metrics and the live view of one audit side: served once,
// for every link the process audits (the shared audit process of
// per_event taps serves all of them).
type aids struct {
	traffic      *tapmetrics.Traffic
	metricsTried bool
	ui           *viewserve.Live
	uiTried      bool
}

// openLink opens the way out and the session of one link named conn
// ("": stdio:<this pid>): diag gets ahp-tap's notices, stderr the
// --console lines. clocked says the link's feeder tells the live conduct
// client its clock while the link is quiet: auditlink.Feed in an audit
// process, or the stdio tap's own auditor (in-process audit).
func (a *aids) openLink(c *Config, conn string, clocked bool, diag, stderr io.Writer) (*linkRun, error) {
	r := &linkRun{diag: diag, c: c}
	l, hook := c.Link, c.hook()
	x, err := openOTLP(c, hook, diag)
	if err != nil {
		return nil, err
	}
	cfg := l.Config
	cfg.Transport = tap.Stdio
	cfg.Lifecycle = c.Lifecycle
	cfg = cfg.Resolved() // the hook's lifecycle, for the capture header
	if c.State != "" {
		// Refused in the forwarding process already (refuseUnsafeState);
		// a directory that changed since is not used either, and never
		// costs the audit.
		if st, err := stdio.OpenDirStore(c.State, diag); err != nil {
			printable.Fprintf(diag, "ahp-tap stdio: --state: %v; the state is not used (retries across processes are not checked)\n", err)
		} else {
			cfg.Events = st
		}
	}
	if conn == "" {
		conn = fmt.Sprintf("stdio:%d", os.Getpid())
	}
	r.conn = conn
	// The way out (package output). A log or a capture that cannot be
	// opened never keeps the backend from running: the harness depends
	// on it, they are aids.
	oc := output.Config{Name: "stdio", Diag: diag, Log: c.Log, LogBestEffort: true,
		OTLP: x, OTLPClose: closeTimeout, SummaryLimit: 1,
		Capture: c.Capture, CaptureBestEffort: true, Header: capture.Header{
			Tool: "ahp-tap " + c.Version, Snapshot: cfg.Snapshot, Transport: tap.Stdio,
			Started: time.Now().UTC(), Conn: conn, Registration: c.Files.Registration, Hook: hook,
			Lifecycle: cfg.Lifecycle, TimeoutMs: c.Files.Timeout.Milliseconds(), RegistrationDoc: l.RegDoc,
			State: stateForHeader(c.State),
		},
		Traffic: a.metrics(c, diag), Conduct: live.ClientFor(c.Conduct, c.Files.Registration, hook, l.Config.Registration, clocked, diag)}
	if c.Console {
		oc.Console = stderr
	}
	if c.Inject != nil {
		if p := c.Inject(hook); p != nil {
			oc.Header.Injected = p.Banner()
			oc.Scenarios = p.Scenarios()
		}
	}
	if oc.Traffic != nil {
		oc.Metrics = oc.Traffic.Gatherer() // pushed to the OTLP collector too
	}
	if u := a.liveView(c, diag); u != nil {
		oc.View = u.View() // the live view, served from this audit side
	}
	if r.out, err = output.Open(oc); err != nil {
		return nil, err // best effort: not reached
	}
	// The session reports the registration's own findings now, even
	// with --audit=false (they are about the configuration, not traffic).
	r.session = l.NewSession(r.out.SessionConfig(tap.SessionConfig{Config: cfg, Conn: conn, MaxLine: c.MaxLine}))
	return r, nil
}

// openOTLP starts the link's exporter, or returns nil when no collector
// is named (--otlp-endpoint, or the OTEL_* environment).
func openOTLP(c *Config, hook string, diag io.Writer) (*otlpexport.Exporter, error) {
	if !otlpexport.Enabled(c.OTLPEndpoint) {
		return nil, nil
	}
	x, err := otlpexport.New(otlpexport.Config{Endpoint: c.OTLPEndpoint, Capture: c.Capture, Version: c.Version, Diag: diag, Hook: hook})
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint: %v", err)
	}
	return x, nil
}

// metrics returns the traffic metrics of this audit side, serving them
// on --metrics the first time. A listen that fails is said once on diag,
// and the audit goes on without metrics; traffic is never affected.
func (a *aids) metrics(c *Config, diag io.Writer) *tapmetrics.Traffic {
	if a.metricsTried {
		return a.traffic
	}
	if c.MetricsAddr == "" {
		if otlpexport.Enabled(c.OTLPEndpoint) {
			// Counted for the OTLP collector only (pushed by each
			// link's exporter), not served.
			a.metricsTried = true
			a.traffic = tapmetrics.NewTraffic()
			a.traffic.ZeroFindings(tapmetrics.CheckIDs())
		}
		return a.traffic
	}
	a.metricsTried = true
	ln, err := tapmetrics.Listen("stdio", c.MetricsAddr, c.AllowRemote, io.Discard) // the forwarding process warned
	if err != nil {
		printable.Fprintf(diag, "ahp-tap: %v; metrics are not served, traffic is not affected\n", err)
		return nil
	}
	t := tapmetrics.NewTraffic()
	t.ZeroFindings(tapmetrics.CheckIDs())
	srv := &http.Server{Handler: t.Mux(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	printable.Fprintf(diag, "ahp-tap stdio: metrics on http://%s/metrics\n", ln.Addr())
	a.traffic = t
	return t
}

// liveView returns the live view of this audit side, serving it on --ui
// the first time. A listen that fails is said once on diag, and the audit
// goes on without it; traffic is never affected.
func (a *aids) liveView(c *Config, diag io.Writer) *viewserve.Live {
	if c.UIAddr == "" || a.uiTried {
		return a.ui
	}
	a.uiTried = true
	u, err := viewserve.OpenLive("stdio", c.UIAddr, c.AllowRemote, c.Version, c.Files.Snapshot, io.Discard) // the forwarding process checked
	if err != nil {
		printable.Fprintf(diag, "ahp-tap: %v; the live view is not served, traffic is not affected\n", err)
		return nil
	}
	u.SetDiag(diag)
	u.Serve()
	a.ui = u
	return u
}

// stateForHeader is the --state directory as a capture header records it
// (issue 21 item 2): absolute, so that the taps a harness starts in
// different working directories name the same directory the same way,
// and replay shares one event store between their segments exactly.
func stateForHeader(dir string) string {
	if dir == "" {
		return ""
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}

// close flushes and closes the way out. It is idempotent.
func (r *linkRun) close() { r.closeWithin(MinSinkClose) }

// closeWithin flushes and closes the way out (conduct, OTLP, log, console,
// capture), giving up after d: a sink that blocks (stderr not read, a hung
// mount) never holds up the exit. Capture writes never disturb traffic: a
// failure is told once. It is idempotent.
func (r *linkRun) closeWithin(d time.Duration) {
	if r.closed || r.out == nil {
		return
	}
	r.closed = true
	if err := r.out.Close(time.Now().Add(d)); err != nil {
		printable.Fprintf(r.diag, "ahp-tap: %v; it is incomplete, traffic was not affected\n", err)
	}
}

// summary is the link's summary: the way out's, with the forwarding
// process's streams when it ran here.
func (r *linkRun) summary(notAudited uint64) *report.Summary {
	return r.out.Summary(notAudited, r.session)
}

func (r *linkRun) writeSummary(w io.Writer, res stdio.Result) {
	s := r.summary(res.NotAudited)
	s.Streams = Streams(res)
	how := fmt.Sprintf("exited with status %d", res.ExitCode)
	if res.Signal != 0 {
		how = "was killed by " + res.Signal.String()
	}
	printable.Fprintf(w, "ahp-tap: backend %s\n", how)
	if r.c.injected() {
		printable.Fprintf(w, "ahp-tap: %s\n", inject.Notice) // issue 25: every report says so
	}
	s.WriteText(w)
}

// Streams is what a stdio tap forwarded each way, for a summary.
func Streams(res stdio.Result) []report.Stream {
	var out []report.Stream
	for _, d := range []struct {
		dir tap.Direction
		st  stdio.DirStats
	}{{tap.FromHarness, res.Harness}, {tap.FromBackend, res.Backend}} {
		out = append(out, report.Stream{Dir: d.dir, Frames: uint64(d.st.Frames), Bytes: uint64(d.st.Bytes), SHA256: hex.EncodeToString(d.st.SHA256)})
	}
	return out
}
