package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/internal/linkconf"
	tapmetrics "github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/viewserve"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/stdiotap"
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
	sharedAudit bool
	conduct     string // --conduct DIR: feed the registration's live conduct timeline
	metricsAddr string
	allowRemote bool
	// uiAddr is --ui.
	uiAddr string
	// inject is --inject and --seed (inject.go).
	inject injectFlags
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
	fs.StringVar(&sf.priority, "audit-priority", string(stdio.PriorityLow), "CPU priority of auditing, `low|idle|normal`: low is nice 5 for the audit process's threads (for the checking thread with --audit complete), and for its whole session while the audit keeps up (nice 0 while it falls behind); idle runs the audit process only on spare CPU (every thread SCHED_IDLE, its session at nice 19: more frames not audited on a saturated machine); normal competes with forwarding")
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

// runStdio wraps a stdio backend: `ahp-tap stdio [flags] -- CMD [ARGS...]`
// (package stdiotap). It exits with the backend's status, or dies of the
// signal that killed it.
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
	c := sf.config(m, prio)
	c.Link, c.Argv, c.Stdin, c.Stdout, c.Flush = l, fs.Args(), m.Stdin, m.Stdout, m.flushDiag
	c.FlagArgs = stdioFlagArgs(args, fs.NArg())
	if c.Plan = sf.inject.plan(sf.hook); c.Plan != nil {
		// Loud when on (issue 25): stderr now, the capture header, every report.
		printable.Fprintf(m.diag(), "ahp-tap stdio: %s\n", c.Plan.Banner())
		c.FlagArgs = append(slices.Clip(c.FlagArgs), sf.inject.seedArg()) // the audit process's header says the same seed
	}
	status, err := stdiotap.Run(ctx, c)
	var se *stdio.StartError
	if errors.As(err, &se) {
		return &exitError{code: se.Code, msg: se.Error()}
	}
	if err != nil {
		return err
	}
	if status != 0 {
		return &exitError{code: status}
	}
	return nil
}

// config is the stdiotap.Config of the flags, for this process's streams
// (the forwarding process's or an audit process's).
func (sf *stdioFlags) config(m *Main, prio stdio.Priority) stdiotap.Config {
	budget := sf.budgetBytes
	if budget == 0 { // an audit process: its flags were checked by the forwarding process
		budget, _ = parseBudget(sf.budget)
	}
	return stdiotap.Config{Version: version,
		Files: linkconf.Files{Registration: sf.registration, Hook: sf.hook, Snapshot: sf.snapshot, Timeout: sf.timeout, Spec: sf.spec},
		Log:   sf.log, Capture: sf.capture, State: sf.state, Lifecycle: sf.lifecycle, Summary: sf.summary, Console: sf.console,
		MaxLine: sf.maxLine, Queue: sf.queue, QueueSet: sf.queueSet, Budget: budget,
		AuditOff: sf.audit == auditOff, Complete: sf.audit == auditComplete, Priority: prio, Drain: sf.drain,
		OTLPEndpoint: sf.otlp.endpoint, SharedAudit: sf.sharedAudit, Conduct: sf.conduct,
		MetricsAddr: sf.metricsAddr, UIAddr: sf.uiAddr, AllowRemote: sf.allowRemote,
		Inject: sf.inject.plan, Stderr: m.Stderr, Diag: m.diag()}
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
	if err := tapmetrics.CheckAddr(sf.metricsAddr, sf.allowRemote, m.diag()); err != nil {
		return "", usageError("%v", err)
	}
	if err := viewserve.CheckAddr("stdio", sf.uiAddr, sf.allowRemote); err != nil {
		return "", usageError("%v", err)
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

// stdioFlagArgs returns the flag arguments of `ahp-tap stdio` (those
// before the backend command), for the audit process.
func stdioFlagArgs(args []string, nCommand int) []string {
	out := args[:len(args)-nCommand]
	if n := len(out); n > 0 && out[n-1] == "--" {
		out = out[:n-1]
	}
	return out
}
