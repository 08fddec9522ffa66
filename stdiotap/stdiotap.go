// Package stdiotap runs `ahp-tap stdio` once its flags are read: the
// forwarding process (the backend's tap, package stdio), the audit
// process it starts for its audit copies, and the shared audit process of
// per_event taps (docs/stdio.md, "Process model"); the link between them
// is package auditlink's, each link's way out package output's. The
// command parses and checks the flags and builds a Config; Run,
// RunAuditProcess and RunAuditServer do the rest.
package stdiotap

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/internal/linkconf"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// MinSinkClose is what closing the log and the capture gets when the
// shutdown bound has already passed.
const MinSinkClose = 100 * time.Millisecond

// closeTimeout is how long a stdio tap waits, at exit, for the OTLP
// collector to take the findings still queued: a per-event harness counts
// the process's exit against its deadline.
const closeTimeout = 200 * time.Millisecond

// Config is `ahp-tap stdio` once its flags are read and checked; the audit
// processes read the same flags.
type Config struct {
	// Version is ahp-tap's version (capture headers, OTLP, the live view,
	// the shared audit process's key).
	Version string
	// Files are the shared flags; Link what they resolved to (Run and a
	// link of the shared audit process; RunAuditProcess loads it itself,
	// once its link is being read).
	Files linkconf.Files
	Link  *linkconf.Loaded
	// Log and Capture are --log and --capture ("": none).
	Log, Capture string
	// State is --state ("": none); Lifecycle --lifecycle.
	State, Lifecycle string
	// Summary and Console are --summary and --console.
	Summary, Console bool
	// MaxLine is --max-audit-line, Queue --audit-queue (QueueSet: it was
	// given, and alone bounds the forwarding process's backlog), Budget
	// --audit-budget in bytes.
	MaxLine, Queue int
	QueueSet       bool
	Budget         int64
	// AuditOff is --audit=false (forward only); Complete --audit complete.
	AuditOff, Complete bool
	// Priority is --audit-priority; Drain --drain.
	Priority stdio.Priority
	Drain    time.Duration
	// OTLPEndpoint is --otlp-endpoint.
	OTLPEndpoint string
	// SharedAudit is --shared-audit; Conduct --conduct ("": none).
	SharedAudit bool
	Conduct     string
	// MetricsAddr and UIAddr are --metrics and --ui ("": none), allowed
	// off loopback with AllowRemote.
	MetricsAddr, UIAddr string
	AllowRemote         bool
	// Inject is the fault plan of a hook (--inject; nil, or a nil plan:
	// none): its banner goes in the capture header and the summary. Plan
	// is the forwarding process's own plan, which alters its traffic.
	Inject func(hook string) *inject.Plan
	Plan   *inject.Plan
	// FlagArgs are the flags, as given, for the audit process; Argv the
	// backend's command.
	FlagArgs, Argv []string
	// The process's streams: Stderr is the backend's too; Diag gets
	// ahp-tap's own messages and must never block. Flush, when set, waits
	// (bounded) for Diag before the process dies of the backend's signal.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Diag           io.Writer
	Flush          func()
}

// hook is the link's hook (the registration's only one without --hook).
func (c *Config) hook() string {
	if c.Link != nil {
		return c.Link.Config.HookID
	}
	return c.Files.Hook
}

// injected says whether --inject is on.
func (c *Config) injected() bool { return c.Inject != nil && c.Inject(c.hook()) != nil }

// ForwardedSignals are the signals ahp-tap stdio passes to the backend's
// process group.
var ForwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// NotifyUnignored relays the signals in sigs that were not ignored when
// ahp-tap started. One ignored at start (nohup, a background job of a
// non-interactive shell) stays ignored, for ahp-tap and for the backend it
// starts, which inherits it (issue 8 item 7).
func NotifyUnignored(c chan<- os.Signal, sigs ...os.Signal) {
	for _, s := range sigs {
		if !signal.Ignored(s) {
			signal.Notify(c, s)
		}
	}
}

// Run is the forwarding process: it runs the backend behind the tap until
// it exits, its audit copies going to an audit process (or audited here),
// and returns the backend's exit status. When the backend died of a
// signal, Run makes this process die of it too. A backend that cannot be
// started is a *stdio.StartError.
func Run(ctx context.Context, c Config) (status int, err error) {
	run, err := prepareSplit(&c)
	if err != nil {
		return 0, err
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
	NotifyUnignored(sigs, ForwardedSignals...)
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
		run.endAudit(res) // by the backend's exit plus --drain
	}
	if err != nil { // a *stdio.StartError among others
		run.close()
		return 0, err
	}
	// The sinks get what is left of the shutdown bound.
	run.closeWithin(max(time.Until(res.Deadline), MinSinkClose))
	if c.Summary && run.audit == nil { // the audit process writes it
		run.writeSummary(c.Diag, res)
	}
	if res.Signal != 0 {
		signal.Stop(sigs)
		if c.Flush != nil {
			c.Flush()
		}
		stdio.DieOfSignal(res.Signal)
	}
	return res.Status(), nil
}

// prepareSplit prepares the forwarding process: the backend's tap with
// its audit copies going to a new audit process. Without auditing
// (--audit=false), or when the audit process cannot be started (said
// once on stderr), it audits in process as before.
func prepareSplit(c *Config) (*linkRun, error) {
	c.FlagArgs = refuseUnsafeState(c)
	if c.AuditOff || c.Complete {
		// --audit=false forwards only; --audit complete makes forwarding
		// wait for the audit, which the pipe to an audit process cannot
		// do: it audits in this process.
		return prepareInProcess(c)
	}
	conn := fmt.Sprintf("stdio:%d", os.Getpid())
	backlog := int(linkBacklog(c))
	var link *auditlink.Link
	var err error
	if sharedAuditWanted(c) {
		if link, err = connectSharedAudit(c, conn, backlog); err != nil {
			printable.Fprintf(c.Stderr, "ahp-tap: the shared audit process of --state is not used (%v); this event gets an audit process of its own\n", err)
		}
	}
	if link == nil {
		var exe string
		if exe, err = os.Executable(); err == nil {
			argv := append([]string{exe, WorkerCommand, "--audit-conn", conn,
				"--audit-fd", fmt.Sprint(auditlink.LinkFD), "--ready-fd", fmt.Sprint(auditlink.ReadyFD)}, c.FlagArgs...)
			link, err = auditlink.StartProcess(argv, c.Stderr, backlog)
		}
	}
	if err != nil {
		printable.Fprintf(c.Stderr, "ahp-tap: cannot start the audit process (%v); auditing in this process, which a SIGKILL of its group loses\n", err)
		return prepareInProcess(c)
	}
	r := &linkRun{diag: c.Stderr, audit: link, c: c}
	r.tap = stdio.New(stdio.Config{
		Command: c.Argv[0], Args: c.Argv[1:],
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr,
		Mirror: link.Mirror(), MaxAuditLine: c.MaxLine, Conn: conn,
		Hash: c.Summary, Diag: c.Diag, AuditPriority: c.Priority,
		Drain: c.Drain, Watchdog: watchdogArgv(), // issue 8 items 3, 10
		Inject: c.Plan, // issue 25
	})
	return r, nil
}

// prepareInProcess prepares the forwarding process auditing its copies
// itself (or, with --audit=false, only forwarding).
func prepareInProcess(c *Config) (*linkRun, error) {
	// The in-process auditor tells the session its clock (stdio's
	// Tap.clock); with --audit=false nothing feeds the session.
	r, err := (&aids{}).openLink(c, "", !c.AuditOff, c.Diag, c.Stderr)
	if err != nil {
		return nil, err
	}
	sess := r.session
	if c.AuditOff {
		sess = nil // forwarding only: no frame is split, checked or captured
	}
	conn := r.conn
	r.tap = stdio.New(stdio.Config{
		Command: c.Argv[0], Args: c.Argv[1:],
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr,
		Session: sess,
		Queue:   c.Queue, MaxAuditLine: c.MaxLine, Conn: conn,
		AuditBytes: c.Budget, Complete: c.Complete,
		Hash: c.Summary, Diag: c.Diag, AuditPriority: c.Priority, Drain: c.Drain,
		Watchdog: watchdogArgv(), Inject: c.Plan,
	})
	return r, nil
}

// watchdogArgv is how a stdio tap starts its watchdog: a /bin/sh script
// (stdio.ShellWatchdog: a start of sh costs a millisecond, one of this
// binary about 30 ms), or else this same binary (/proc/self/exe on Linux,
// which survives the binary being replaced) with the internal __watchdog
// command. Nil when neither can be found: the tap then runs without one.
func watchdogArgv() []string {
	if argv := stdio.ShellWatchdog(); argv != nil {
		return argv
	}
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return nil
		}
	}
	return []string{exe, "__watchdog"}
}

// endAudit ends the link to the audit once the backend's tap has run:
// the end record, what waits in the backlog, and the wait for the audit
// to finish, all by the backend's exit plus --drain (issue 28 item 6), so
// that the log and capture are complete when ahp-tap exits. What the
// audit could not do is said, never silently lost (item 3): the audit
// counts what it did not check (TAP-1 in the log, a dropped note in the
// capture); here, one line for an audit that did not finish in time, and
// a TAP-1 finding for one that ended without finishing (killed, item 12).
func (r *linkRun) endAudit(res stdio.Result) {
	deadline := res.Deadline
	if now := time.Now().Add(MinSinkClose); deadline.Before(now) {
		deadline = now // a start failure, or a signal asked for an exit now
	}
	e := r.audit.End(res, deadline)
	frames := uint64(res.Harness.Frames + res.Backend.Frames)
	diag := r.c.Diag
	switch {
	case e.Unsent > 0:
		printable.Fprintf(diag, "ahp-tap: the audit process did not take the last %d bytes of audit copies within --drain (%v); their frames were not audited (TAP-1), and the audit took the link for killed\n", e.Unsent, r.c.Drain)
	case e.Gone:
		// What the audit had not written when it ended is lost: this
		// process did not keep the copies. Say so where the findings go.
		msg := fmt.Sprintf("the audit process ended before it finished this link (killed?): findings about up to %d frames of the link may be missing", frames)
		printable.Fprintf(diag, "ahp-tap: %s (TAP-1)\n", msg)
		r.logAuditLoss(msg)
	case !e.Finished:
		printable.Fprintf(diag, "ahp-tap: the audit of this link had not finished within --drain (%v) of the backend's exit; the log and capture are completed after ahp-tap exits\n", r.c.Drain)
	}
}

// logAuditLoss writes a TAP-1 finding about this link to the violation
// log, when there is one of its own (not stderr, which had the line),
// through the way out (package output) as every finding.
func (r *linkRun) logAuditLoss(msg string) {
	if r.c.Log == "" || r.c.Log == "-" {
		return
	}
	o, err := output.Open(output.Config{Name: "stdio", Diag: io.Discard, Log: r.c.Log, LogBestEffort: true})
	if err != nil {
		return
	}
	f := tap.TapIncomplete.At(nil, tap.Warn, "", "%s", msg)
	f.Conn, f.Time = fmt.Sprintf("stdio:%d", os.Getpid()), time.Now()
	o.Sink().Write(f)
	_ = o.Close(time.Now().Add(MinSinkClose))
}

// refuseUnsafeState refuses a --state directory that cannot be trusted
// (one every user may write to, one of another user's, one that cannot be
// written) with one line on stderr, and goes on without it (issue 28 item
// 7): the audit, the log and the capture still run, only the state is not
// used. It returns the flags for the audit process, which then does not
// use it either.
func refuseUnsafeState(c *Config) []string {
	if c.State == "" {
		return c.FlagArgs
	}
	if _, err := stdio.OpenDirStore(c.State, io.Discard); err != nil {
		printable.Fprintf(c.Diag, "ahp-tap stdio: --state: %v; the state is not used (retries across processes are not checked)\n", err)
		c.State = ""
		return append(slices.Clip(c.FlagArgs), "--state=")
	}
	return c.FlagArgs
}
