package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// stdioFlags are the flags of `ahp-tap stdio`.
type stdioFlags struct {
	engineFlags
	log       string
	capture   string
	state     string
	lifecycle string
	summary   bool
	console   bool
	maxLine   int
	queue     int
	audit     bool
	priority  string
	otlp      otlpFlags
	conn      string // the link's name ("": stdio:<this pid>); set in the audit process
}

func (sf *stdioFlags) register(fs *flag.FlagSet, stderr io.Writer) {
	sf.engineFlags.register(fs)
	fs.StringVar(&sf.log, "log", "", "append findings to the violation log at `PATH` (JSON Lines, mode 0600; - for stderr)")
	fs.StringVar(&sf.capture, "capture", "", "append every frame to the capture at `PATH` (mode 0600; safe for concurrent per_event processes)")
	fs.StringVar(&sf.state, "state", "", "share conversation state with other ahp-tap processes in `DIR` (per_event backends: retries across processes)")
	fs.StringVar(&sf.lifecycle, "lifecycle", "", "backend lifecycle `persistent|per_event` when no --registration/--hook says it")
	fs.BoolVar(&sf.summary, "summary", isTerminal(stderr), summaryHelp)
	fs.BoolVar(&sf.console, "console", false, consoleHelp+"; stderr is the backend's too")
	fs.IntVar(&sf.maxLine, "max-audit-line", stdio.DefaultMaxAuditLine, "audit at most `BYTES` of one line (longer lines are forwarded whole and reported as not audited)")
	fs.BoolVar(&sf.audit, "audit", true, "check the traffic; --audit=false only forwards (to compare overhead)")
	fs.StringVar(&sf.priority, "audit-priority", string(stdio.PriorityLow), "CPU priority of auditing, `low|idle|normal`: low is nice 5; idle uses only spare CPU (lowest latency cost, more frames not audited under load); normal competes with forwarding")
	fs.IntVar(&sf.queue, "audit-queue", tap.DefaultQueue, "audit queue depth in `FRAMES` (when full, audit copies are dropped, never traffic)")
	sf.otlp.register(fs)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// runStdio wraps a stdio backend: `ahp-tap stdio [flags] -- CMD [ARGS...]`.
// It exits with the backend's status, or dies of the signal that killed it.
func (m *Main) runStdio(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	var sf stdioFlags
	sf.register(fs, m.Stderr)
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := checkStdioValues(&sf); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("stdio: no backend command given (usage: ahp-tap stdio [flags] -- CMD [ARGS...])")
	}
	prio, err := stdio.ParsePriority(sf.priority)
	if err != nil {
		return usageError("--audit-priority: %v", err)
	}
	switch sf.lifecycle {
	case "", "persistent", "per_event":
	default:
		return usageError("--lifecycle %q is not persistent or per_event", sf.lifecycle)
	}
	l, err := sf.load()
	if err != nil {
		return err
	}
	if os.Getenv("GOMAXPROCS") == "" {
		// The audit goroutines run on low-priority threads and may hold
		// a P each while they work; two more Ps than CPUs leave the
		// forwarding loops one at all times, and the kernel arbitrates.
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 2)
	}
	run, err := m.prepareSplit(&sf, l, stdioFlagArgs(args, fs.NArg()), fs.Args(), prio) // auditworker.go
	if err != nil {
		return err
	}
	defer run.close()

	// Signals are the backend's business: forward them (stdio.Tap.Signal
	// kills the group on the second). SIGPIPE is handled as an error on
	// the write to the harness, which the backend then sees too.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			if s != syscall.SIGPIPE {
				run.tap.Signal(s)
			}
		}
	}()

	// ctx is cancelled by the first SIGINT/SIGTERM in main; the backend
	// decides what that signal means, so it must not stop the tap.
	res, err := run.tap.Run(context.WithoutCancel(ctx))
	if run.audit != nil {
		run.audit.end(res) // auditworker.go: bounded
	}
	var se *stdio.StartError
	if errors.As(err, &se) {
		run.close()
		return &exitError{code: se.Code, msg: se.Error()}
	}
	if err != nil {
		run.close()
		return err
	}
	run.close()
	if sf.summary && run.audit == nil { // the audit process writes it
		run.writeSummary(m.Stderr, res)
	}
	if res.Signal != 0 {
		signal.Stop(sigs)
		stdio.DieOfSignal(res.Signal)
	}
	if st := res.Status(); st != 0 {
		return &exitError{code: st}
	}
	return nil
}

// stdioRun is one wrapped backend with its sinks.
type stdioRun struct {
	tap       *stdio.Tap
	session   *tap.Session // nil with --audit=false
	log       *report.Log
	capture   *capture.Writer
	collector *report.Collector
	console   *report.Console
	sf        *stdioFlags
	audit     *auditLink // the audit process, when auditing happens there
	diag      io.Writer  // ahp-tap's own one-line notices (stderr)
	otlp      *otlpexport.Exporter
	closed    bool
}

func (m *Main) prepareStdio(sf *stdioFlags, l *loaded, argv []string, prio stdio.Priority) (*stdioRun, error) {
	r := &stdioRun{collector: &report.Collector{Limit: 1}, diag: m.Stderr, sf: sf}
	x, err := sf.otlp.open(sf.capture, m.Stderr)
	if err != nil {
		return nil, err
	}
	r.otlp = x
	cfg := l.cfg
	cfg.Transport = tap.Stdio
	cfg.Lifecycle = sf.lifecycle
	cfg = cfg.Resolved() // the hook's lifecycle, for the capture header
	if sf.state != "" {
		st, err := stdio.OpenDirStore(sf.state, m.Stderr)
		if err != nil {
			return nil, usageError("--state: %v", err)
		}
		cfg.Events = st
	}
	sinks := tap.MultiSink{r.collector}
	if r.console = openConsole(sf.console, m.Stderr); r.console != nil {
		sinks = append(sinks, r.console)
	}
	if sf.log != "" {
		// A log that cannot be opened never keeps the backend from
		// running: the harness depends on it, the log is an aid.
		r.log = report.OpenLogBestEffort(sf.log, m.Stderr)
		sinks = append(sinks, r.log)
	}
	if r.otlp != nil {
		sinks = append(sinks, r.otlp)
	}
	conn := sf.conn
	if conn == "" {
		conn = fmt.Sprintf("stdio:%d", os.Getpid())
	}
	var rec tap.Recorder
	if sf.capture != "" {
		h := capture.Header{
			Tool: "ahp-tap " + version, Snapshot: cfg.Snapshot, Transport: tap.Stdio,
			Started: time.Now().UTC(), Conn: conn, Registration: sf.registration, Hook: sf.hook,
			Lifecycle: cfg.Lifecycle, TimeoutMs: sf.timeout.Milliseconds(), RegistrationDoc: l.regDoc,
		}
		w, err := capture.Create(sf.capture, h)
		if err != nil {
			fmt.Fprintf(m.Stderr, "ahp-tap: cannot open the capture: %v; nothing is captured, traffic is not affected\n", err)
		} else {
			r.capture, rec = w, w
		}
	}
	// The session reports the registration's own findings now, even
	// with --audit=false (they are about the configuration, not traffic).
	r.session = l.session(cfg, sinks, rec, conn, sf.maxLine)
	sess := r.session
	if !sf.audit {
		sess = nil // forwarding only: no frame is split, checked or captured
	}
	r.tap = stdio.New(stdio.Config{
		Command: argv[0], Args: argv[1:],
		Stdin: m.Stdin, Stdout: m.Stdout, Stderr: m.Stderr,
		Session: sess,
		Queue:   sf.queue, MaxAuditLine: sf.maxLine, Conn: conn,
		Hash: sf.summary, Diag: m.Stderr, AuditPriority: prio,
	})
	return r, nil
}

// close flushes and closes the log and the capture. It is idempotent.
func (r *stdioRun) close() {
	if r.closed {
		return
	}
	r.closed = true
	closeOTLP(r.otlp, stdioCloseTimeout, tap.MultiSink{r.collector, r.log})
	r.log.Close()
	r.console.Close()
	if r.capture != nil {
		// Capture writes never disturb traffic; a failure is told once.
		if err := r.capture.Err(); err != nil {
			fmt.Fprintf(r.diag, "ahp-tap: writing the capture failed (%v); it is incomplete, traffic was not affected\n", err)
		}
		r.capture.Close()
	}
}

func (r *stdioRun) writeSummary(w io.Writer, res stdio.Result) {
	s := r.collector.Summary()
	for _, d := range []struct {
		dir tap.Direction
		st  stdio.DirStats
	}{{tap.FromHarness, res.Harness}, {tap.FromBackend, res.Backend}} {
		s.Streams = append(s.Streams, report.Stream{Dir: d.dir, Frames: uint64(d.st.Frames), Bytes: uint64(d.st.Bytes), SHA256: hex.EncodeToString(d.st.SHA256)})
	}
	s.NotAudited = res.NotAudited
	s.LogDropped = r.log.Dropped()
	s.NotPossible = notPossible(r.session.NotChecked())
	s.FindingsTo = findingsTo(r.sf.log, r.log.Failed(), r.sf.console)
	how := fmt.Sprintf("exited with status %d", res.ExitCode)
	if res.Signal != 0 {
		how = "was killed by " + res.Signal.String()
	}
	fmt.Fprintf(w, "ahp-tap: backend %s\n", how)
	s.WriteText(w)
}
