package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/inject"
	tapmetrics "github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// stdioFlags are the flags of `ahp-tap stdio`.
type stdioFlags struct {
	engineFlags
	log         string
	capture     string
	state       string
	lifecycle   string
	summary     bool
	console     bool
	maxLine     int
	queue       int
	queueSet    bool // --audit-queue was given: it alone bounds the forwarding process's backlog
	audit       auditMode
	budget      string
	budgetBytes int64
	priority    string
	drain       time.Duration
	otlp        otlpFlags
	conn        string // the link's name ("": stdio:<this pid>); set in the audit process
	sharedAudit bool
	conduct     string // --conduct DIR: feed the registration's live conduct timeline
	metricsAddr string
	allowRemote bool
	// traffic is the audit side's metrics (metrics.go), served on
	// metricsAddr once metricsTried.
	traffic      *tapmetrics.Traffic
	metricsTried bool
	// uiAddr is --ui; ui the live view this audit side serves on it once
	// uiTried (ui.go).
	uiAddr  string
	ui      *liveUI
	uiTried bool
	// inject is --inject and --seed (inject.go); plan the forwarding
	// process's plan of faults (nil: none, and in an audit process).
	inject injectFlags
	plan   *inject.Plan
}

func (sf *stdioFlags) register(fs *flag.FlagSet, stderr io.Writer) {
	sf.engineFlags.register(fs)
	fs.StringVar(&sf.log, "log", "", "append findings to the violation log at `PATH` (JSON Lines, mode 0600; - for stderr)")
	fs.StringVar(&sf.capture, "capture", "", "append every frame to the capture at `PATH` (mode 0600; safe for concurrent per_event processes)")
	fs.StringVar(&sf.state, "state", "", "share conversation state with other ahp-tap processes in `DIR` (per_event backends: retries across processes)")
	fs.StringVar(&sf.conduct, "conduct", "", "feed the live conduct timeline of the registration's taps that share `DIR` (needs --registration and --hook; docs/conduct.md)")
	fs.BoolVar(&sf.sharedAudit, "shared-audit", true, "with per_event and --state: audit in one process shared by the taps of DIR with the same flags, rather than start one per event (false: one per event; never with --summary, --console or --log -)")
	fs.StringVar(&sf.lifecycle, "lifecycle", "", "backend lifecycle `persistent|per_event` when no --registration/--hook says it")
	fs.BoolVar(&sf.summary, "summary", isTerminal(stderr), summaryHelp)
	fs.BoolVar(&sf.console, "console", false, consoleHelp+"; stderr is the backend's too")
	fs.IntVar(&sf.maxLine, "max-audit-line", stdio.DefaultMaxAuditLine, "audit at most `BYTES` of one line (longer lines are forwarded whole and reported as not audited)")
	sf.audit = auditBestEffort
	fs.Var(&sf.audit, "audit", "`MODE`: best-effort (drop audit copies rather than slow traffic), complete (forwarding waits for the audit: every frame checked, at the cost of latency and throughput), or false (only forward, to compare overhead)")
	fs.StringVar(&sf.budget, "audit-budget", "64MiB", "cap the bytes of frames waiting for the audit at `SIZE` (1MiB to 64GiB; frames beyond it are dropped and reported, TAP-1, or waited for with --audit complete)")
	fs.StringVar(&sf.priority, "audit-priority", string(stdio.PriorityLow), "CPU priority of auditing, `low|idle|normal`: low is nice 5; idle uses only spare CPU (lowest latency cost, more frames not audited under load); normal competes with forwarding")
	fs.IntVar(&sf.queue, "audit-queue", tap.DefaultQueue, "audit queue depth in `FRAMES` (when full, audit copies are dropped, never traffic)")
	fs.DurationVar(&sf.drain, "drain", stdio.DefaultDrain, "once the backend has exited, exit within `D` even if a process it started holds its stdout open, the harness stops reading, or a log or capture write blocks (what is left is not forwarded or not audited, and reported)")
	fs.StringVar(&sf.metricsAddr, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics from the audit process (per_event with --state: the shared audit process, one endpoint for every event)")
	fs.StringVar(&sf.uiAddr, "ui", "", "serve the live view (the HTML report's conversation, updated as frames and findings arrive) at http://`ADDR`/ from the audit process (per_event with --state: the shared audit process, one view for every event); loopback only unless --allow-remote")
	fs.BoolVar(&sf.allowRemote, "allow-remote", false, "let --metrics and --ui listen on an address other than loopback (anyone who can reach it may read the metrics or watch the traffic)")
	sf.otlp.register(fs)
	sf.inject.register(fs, inject.Stdio)
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
	prio, err := m.checkStdioFlags(fs, &sf)
	if err != nil {
		return err
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
	flagArgs := stdioFlagArgs(args, fs.NArg())
	if sf.plan = sf.inject.plan(sf.hook); sf.plan != nil {
		// Loud when on (issue 25): stderr now, the capture header, every report.
		printable.Fprintf(m.diag(), "ahp-tap stdio: %s\n", sf.plan.Banner())
		flagArgs = append(slices.Clip(flagArgs), sf.inject.seedArg()) // the audit process's header says the same seed
	}
	run, err := m.prepareSplit(&sf, l, flagArgs, fs.Args(), prio) // auditworker.go
	if err != nil {
		return err
	}
	defer run.close()

	// Signals are the backend's business: forward them (stdio.Tap.Signal
	// kills the group on the second termination signal, and a signal once
	// the backend has exited ends the shutdown at once). SIGQUIT is
	// forwarded too, not turned into a Go stack dump; SIGUSR1, SIGUSR2 and
	// SIGWINCH reach the backend rather than being swallowed (issue 8 item
	// 10). A signal ignored when ahp-tap started stays ignored, and the
	// backend inherits it ignored (item 7: nohup). SIGPIPE is handled as
	// an error on the write to the harness, which the backend then sees
	// too.
	sigs := make(chan os.Signal, 8)
	notifyUnignored(sigs, forwardedSignals...)
	signal.Notify(sigs, syscall.SIGPIPE)
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
		m.endAudit(run, res) // auditworker.go: by the backend's exit plus --drain
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
	// The sinks get what is left of the shutdown bound.
	run.closeWithin(max(time.Until(res.Deadline), minSinkClose))
	if sf.summary && run.audit == nil { // the audit process writes it
		run.writeSummary(m.diag(), res)
	}
	if res.Signal != 0 {
		signal.Stop(sigs)
		m.flushDiag()
		stdio.DieOfSignal(res.Signal)
	}
	if st := res.Status(); st != 0 {
		return &exitError{code: st}
	}
	return nil
}

// checkStdioFlags checks the values of stdio's flags (exit 2 with a
// one-line reason for a bad one), fits --max-audit-line to the budget and
// returns the audit's priority.
func (m *Main) checkStdioFlags(fs *flag.FlagSet, sf *stdioFlags) (stdio.Priority, error) {
	fs.Visit(func(f *flag.Flag) { sf.queueSet = sf.queueSet || f.Name == "audit-queue" })
	if err := checkStdioValues(sf); err != nil {
		return "", err
	}
	if err := sf.validate(); err != nil {
		return "", err // before the budget shrinks --max-audit-line to fit
	}
	if err := checkMetricsAddr(sf.metricsAddr, sf.allowRemote, m.diag()); err != nil {
		return "", err
	}
	if err := checkUIAddr("stdio", sf.uiAddr, sf.allowRemote); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", usageError("stdio: no backend command given (usage: ahp-tap stdio [flags] -- CMD [ARGS...])")
	}
	budget, err := parseBudget(sf.budget)
	if err != nil {
		return "", err
	}
	if int64(sf.maxLine) > budget {
		sf.maxLine = int(budget) // a line must fit the budget to be audited
	}
	sf.budgetBytes = budget
	prio, err := stdio.ParsePriority(sf.priority)
	if err != nil {
		return "", usageError("--audit-priority: %v", err)
	}
	switch sf.lifecycle {
	case "", "persistent", "per_event":
	default:
		return "", usageError("--lifecycle %q is not persistent or per_event", sf.lifecycle)
	}
	return prio, nil
}

// stdioRun is one wrapped backend with its way out.
type stdioRun struct {
	tap     *stdio.Tap
	session *tap.Session   // nil with --audit=false
	out     *output.Output // nil in a forwarding process whose audit is elsewhere
	sf      *stdioFlags
	audit   *auditlink.Link // the audit process, when auditing happens there
	diag    io.Writer       // ahp-tap's own one-line notices (stderr)
	closed  bool
}

// forwardedSignals are the signals ahp-tap stdio passes to the backend's
// process group.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// minSinkClose is what closing the log and the capture gets when the
// shutdown bound has already passed.
const minSinkClose = 100 * time.Millisecond

// Flag ranges (issue 8 item 9: a flag that would exhaust memory is a usage
// error, not an out-of-memory kill).
const (
	maxAuditQueue = 1 << 20 // frames
	maxAuditLine  = 1 << 30 // bytes
	maxDrain      = time.Hour
)

// validate checks the ranges of the numeric flags.
func (sf *stdioFlags) validate() error {
	switch {
	case sf.queue < 1 || sf.queue > maxAuditQueue:
		return usageError("--audit-queue %d is out of range (1 to %d frames)", sf.queue, maxAuditQueue)
	case sf.maxLine < 1 || sf.maxLine > maxAuditLine:
		return usageError("--max-audit-line %d is out of range (1 to %d bytes)", sf.maxLine, maxAuditLine)
	case sf.drain <= 0 || sf.drain > maxDrain:
		return usageError("--drain %s is out of range (more than 0, at most %s)", sf.drain, maxDrain)
	case sf.conduct != "" && (sf.registration == "" || sf.hook == ""):
		return usageError("--conduct needs --registration and --hook: the conduct timeline places each link by its hook")
	}
	return nil
}

func (m *Main) prepareStdio(sf *stdioFlags, l *loaded, argv []string, prio stdio.Priority) (*stdioRun, error) {
	r := &stdioRun{diag: m.diag(), sf: sf}
	x, err := sf.otlp.openHook(sf.capture, sf.hook, m.diag())
	if err != nil {
		return nil, err
	}
	cfg := l.cfg
	cfg.Transport = tap.Stdio
	cfg.Lifecycle = sf.lifecycle
	cfg = cfg.Resolved() // the hook's lifecycle, for the capture header
	if sf.state != "" {
		// Refused in the forwarding process already (refuseUnsafeState);
		// a directory that changed since is not used either, and never
		// costs the audit.
		if st, err := stdio.OpenDirStore(sf.state, m.diag()); err != nil {
			printable.Fprintf(m.diag(), "ahp-tap stdio: --state: %v; the state is not used (retries across processes are not checked)\n", err)
		} else {
			cfg.Events = st
		}
	}
	conn := sf.conn
	if conn == "" {
		conn = fmt.Sprintf("stdio:%d", os.Getpid())
	}
	// The way out (package output). A log or a capture that cannot be
	// opened never keeps the backend from running: the harness depends
	// on it, they are aids.
	oc := output.Config{Name: "stdio", Diag: m.diag(), Log: sf.log, LogBestEffort: true,
		OTLP: x, OTLPClose: stdioCloseTimeout, SummaryLimit: 1,
		Capture: sf.capture, CaptureBestEffort: true, Header: capture.Header{
			Tool: "ahp-tap " + version, Snapshot: cfg.Snapshot, Transport: tap.Stdio,
			Started: time.Now().UTC(), Conn: conn, Registration: sf.registration, Hook: sf.hook,
			Lifecycle: cfg.Lifecycle, TimeoutMs: sf.timeout.Milliseconds(), RegistrationDoc: l.regDoc,
			State: stateForHeader(sf.state),
		},
		Traffic: sf.stdioMetrics(m.diag()), Conduct: sf.conductClient(l, m.diag())}
	if sf.console {
		oc.Console = m.Stderr
	}
	if sf.inject.on() {
		oc.Header.Injected = sf.inject.plan(sf.hook).Banner()
		oc.Scenarios = sf.inject.scenarios()
	}
	if oc.Traffic != nil {
		oc.Metrics = oc.Traffic.Gatherer() // pushed to the OTLP collector too
	}
	if u := sf.stdioUI(m.diag()); u != nil {
		oc.View = u.hub // the live view, served from this audit side (ui.go)
	}
	if r.out, err = output.Open(oc); err != nil {
		return nil, err // best effort: not reached
	}
	// The session reports the registration's own findings now, even
	// with --audit=false (they are about the configuration, not traffic).
	r.session = l.newSession(r.out.SessionConfig(tap.SessionConfig{Config: cfg, Conn: conn, MaxLine: sf.maxLine}))
	sess := r.session
	if sf.audit == auditOff {
		sess = nil // forwarding only: no frame is split, checked or captured
	}
	r.tap = stdio.New(stdio.Config{
		Command: argv[0], Args: argv[1:],
		Stdin: m.Stdin, Stdout: m.Stdout, Stderr: m.Stderr,
		Session: sess,
		Queue:   sf.queue, MaxAuditLine: sf.maxLine, Conn: conn,
		AuditBytes: sf.budgetBytes, Complete: sf.audit == auditComplete,
		Hash: sf.summary, Diag: m.diag(), AuditPriority: prio, Drain: sf.drain,
		Watchdog: watchdogArgv(), Inject: sf.plan,
	})
	return r, nil
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

// watchdogArgv is how a stdio tap starts its watchdog: this same binary
// (/proc/self/exe on Linux, which survives the binary being replaced),
// with the internal __watchdog command. Nil when the binary cannot be
// found: the tap then runs without one.
func watchdogArgv() []string {
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return nil
		}
	}
	return []string{exe, "__watchdog"}
}

// close flushes and closes the way out. It is idempotent.
func (r *stdioRun) close() { r.closeWithin(minSinkClose) }

// closeWithin flushes and closes the way out (conduct, OTLP, log, console,
// capture), giving up after d: a sink that blocks (stderr not read, a hung
// mount) never holds up the exit. Capture writes never disturb traffic: a
// failure is told once. It is idempotent.
func (r *stdioRun) closeWithin(d time.Duration) {
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
func (r *stdioRun) summary(notAudited uint64) *report.Summary {
	return r.out.Summary(notAudited, r.session)
}

func (r *stdioRun) writeSummary(w io.Writer, res stdio.Result) {
	s := r.summary(res.NotAudited)
	s.Streams = streamsOf(res)
	how := fmt.Sprintf("exited with status %d", res.ExitCode)
	if res.Signal != 0 {
		how = "was killed by " + res.Signal.String()
	}
	printable.Fprintf(w, "ahp-tap: backend %s\n", how)
	if r.sf != nil && r.sf.inject.on() {
		printable.Fprintf(w, "ahp-tap: %s\n", inject.Notice) // issue 25: every report says so
	}
	s.WriteText(w)
}
