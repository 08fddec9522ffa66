package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// The stdio tap is two processes (docs/stdio.md, "Process model"): the
// forwarding process the harness starts, which shares the harness's
// process group and fate, and an audit process in a session of its own,
// which reads the audit copies from a pipe, runs the checks and writes the
// log, capture and summary. The link between them, its protocol and the
// shared audit process of per_event taps are package auditlink's; this
// file is the wiring: flags in, a session and its sinks out.

// auditWorkerCommand is the hidden subcommand that runs the audit process.
const auditWorkerCommand = "__audit-process"

// auditBound bounds an audit process's life after its link ended.
const auditBound = auditlink.Bound

// auditReserve is what an audit keeps of a clean end's deadline (the
// backend's exit plus --drain) to close the session and flush its sinks:
// it checks frames until then, and counts the rest as not audited.
func auditReserve(drain time.Duration) time.Duration {
	return min(max(drain/4, 20*time.Millisecond), time.Second)
}

// linkBacklog is the bytes of audit copies that may wait in the
// forwarding process for room in the link: --audit-queue FRAMES at about
// 2 KiB a frame when it is given, else the larger of that (8 MiB) and half
// the audit budget (32 MiB by default). 8 MiB dropped frames at 5,000
// intercepts/s whenever the audit process stalled for about half a second
// on a shared machine (BENCHMARKS.md, Audited fraction).
func (sf *stdioFlags) linkBacklog() int64 {
	backlog := int64(max(sf.queue, 1)) * 2048
	if !sf.queueSet {
		budget := sf.budgetBytes
		if budget == 0 {
			budget, _ = parseBudget(sf.budget)
		}
		backlog = max(backlog, budget/2)
	}
	return backlog
}

// linkReader bounds the audit process's queue of records read off the
// link and not yet checked: as much as the forwarding process's backlog,
// and the 4 MiB it always had, so that reading the link as fast as it
// comes (the end record is never stuck behind a full pipe) keeps the
// buffering a burst had; a record counts 128 bytes besides its payload.
func (sf *stdioFlags) linkReader() auditlink.ReaderConfig {
	b := auditlink.DefaultReaderBytes + sf.linkBacklog()
	return auditlink.ReaderConfig{Bytes: b, Depth: int(max(int64(sf.queue), b/128))}
}

// runAuditProcess is the audit process: `ahp-tap __audit-process
// --audit-conn CONN --audit-fd FD STDIO-FLAGS...`. It reads the audit link
// on FD until it ends, feeding one tap.Session; a clean end is finished by
// the forwarding process's deadline (its --drain), a killed link within
// auditBound.
func (m *Main) runAuditProcess(_ context.Context, args []string) error {
	// Signals are for the forwarding process; a closed stderr is an
	// error on write, not a death.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT)
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	var sf stdioFlags
	sf.register(fs, m.Stderr)
	conn := fs.String("audit-conn", "", "the link's name")
	fd := fs.Int("audit-fd", auditlink.LinkFD, "the audit link's file descriptor")
	readyFD := fs.Int("ready-fd", -1, "a file descriptor to write to once the link is being read")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { sf.queueSet = sf.queueSet || f.Name == "audit-queue" })
	link := os.NewFile(uintptr(*fd), "audit-link")
	if link == nil {
		return usageError("%s: no audit link on fd %d", auditWorkerCommand, *fd)
	}
	defer link.Close()
	// Read the link first, then say so: the rules load while the copies
	// queue here rather than in the pipe. The reader's thread is made
	// before the priority drops, and keeps the process's.
	rcfg := sf.linkReader()
	rd := auditlink.NewReader(link, rcfg)
	auditlink.SignalReady(*readyFD)
	l, err := sf.load()
	if err != nil {
		rd.Discard() // the forwarding process never waits on us
		return err
	}
	prio, _ := stdio.ParsePriority(sf.priority)
	sf.conn, sf.audit = *conn, auditOff // no forwarding here: only the session is used
	run, err := m.prepareStdio(&sf, l, []string{"true"}, prio)
	if err != nil {
		rd.Discard()
		return err
	}
	// The audit process holds a few bounded buffers (the reader's queue,
	// the audit copy of a line): keep the heap near them.
	debug.SetMemoryLimit(48<<20 + rcfg.Bytes)
	debug.SetGCPercent(50)
	stdio.AuditThread(prio)
	out := auditlink.Feed(rd, run.session, *conn, auditReserve(sf.drain))
	// From here the link is over: exit within the bound, whatever is left.
	bound := time.AfterFunc(auditBound, func() {
		printable.Fprintf(m.Stderr, "ahp-tap: the audit process did not finish within %v of the link's end; the log or capture may be incomplete\n", auditBound)
		os.Exit(3)
	})
	defer bound.Stop()
	a := auditlink.Audit{Session: run.session, CloseSinks: run.closeWithin}
	a.Close(out, minSinkClose)
	if sf.summary {
		if out.Clean {
			res := out.Result
			res.NotAudited = run.session.NotAudited()
			run.writeSummary(m.Stderr, res)
		} else {
			fmt.Fprintln(m.Stderr, "ahp-tap: the forwarding process ended without closing the audit link (it was killed); the audit process checked everything it had received")
			run.summary(run.session.NotAudited()).WriteText(m.Stderr)
		}
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

// prepareSplit prepares the forwarding process: the backend's tap with
// its audit copies going to a new audit process. Without auditing
// (--audit=false), or when the audit process cannot be started (said
// once on stderr), it audits in process as before.
func (m *Main) prepareSplit(sf *stdioFlags, l *loaded, flagArgs, argv []string, prio stdio.Priority) (*stdioRun, error) {
	flagArgs = m.refuseUnsafeState(sf, flagArgs)
	if sf.audit != auditBestEffort {
		// --audit=false forwards only; --audit complete makes forwarding
		// wait for the audit, which the pipe to an audit process cannot
		// do: it audits in this process.
		return m.prepareStdio(sf, l, argv, prio)
	}
	conn := fmt.Sprintf("stdio:%d", os.Getpid())
	backlog := int(sf.linkBacklog())
	var link *auditlink.Link
	var err error
	if sharedAuditWanted(sf, l) { // sharedaudit.go
		if link, err = m.connectSharedAudit(sf, flagArgs, conn, backlog); err != nil {
			printable.Fprintf(m.Stderr, "ahp-tap: the shared audit process of --state is not used (%v); this event gets an audit process of its own\n", err)
		}
	}
	if link == nil {
		var exe string
		if exe, err = os.Executable(); err == nil {
			argv := append([]string{exe, auditWorkerCommand, "--audit-conn", conn,
				"--audit-fd", fmt.Sprint(auditlink.LinkFD), "--ready-fd", fmt.Sprint(auditlink.ReadyFD)}, flagArgs...)
			link, err = auditlink.StartProcess(argv, m.Stderr, backlog)
		}
	}
	if err != nil {
		printable.Fprintf(m.Stderr, "ahp-tap: cannot start the audit process (%v); auditing in this process, which a SIGKILL of its group loses\n", err)
		return m.prepareStdio(sf, l, argv, prio)
	}
	r := &stdioRun{diag: m.Stderr, audit: link, sf: sf}
	r.tap = stdio.New(stdio.Config{
		Command: argv[0], Args: argv[1:],
		Stdin: m.Stdin, Stdout: m.Stdout, Stderr: m.Stderr,
		Mirror: link.Mirror(), MaxAuditLine: sf.maxLine, Conn: conn,
		Hash: sf.summary, Diag: m.diag(), AuditPriority: prio,
		Drain: sf.drain, Watchdog: watchdogArgv(), // issue 8 items 3, 10
		Inject: sf.plan, // issue 25
	})
	return r, nil
}

// endAudit ends the link to the audit once the backend's tap has run:
// the end record, what waits in the backlog, and the wait for the audit
// to finish, all by the backend's exit plus --drain (issue 28 item 6), so
// that the log and capture are complete when ahp-tap exits. What the
// audit could not do is said, never silently lost (item 3): the audit
// counts what it did not check (TAP-1 in the log, a dropped note in the
// capture); here, one line for an audit that did not finish in time, and
// a TAP-1 finding for one that ended without finishing (killed, item 12).
func (m *Main) endAudit(run *stdioRun, res stdio.Result) {
	deadline := res.Deadline
	if now := time.Now().Add(minSinkClose); deadline.Before(now) {
		deadline = now // a start failure, or a signal asked for an exit now
	}
	e := run.audit.End(res, deadline)
	frames := uint64(res.Harness.Frames + res.Backend.Frames)
	switch {
	case e.Unsent > 0:
		printable.Fprintf(m.diag(), "ahp-tap: the audit process did not take the last %d bytes of audit copies within --drain (%v); their frames were not audited (TAP-1), and the audit took the link for killed\n", e.Unsent, run.sf.drain)
	case e.Gone:
		// What the audit had not written when it ended is lost: this
		// process did not keep the copies. Say so where the findings go.
		msg := fmt.Sprintf("the audit process ended before it finished this link (killed?): findings about up to %d frames of the link may be missing", frames)
		printable.Fprintf(m.diag(), "ahp-tap: %s (TAP-1)\n", msg)
		m.logAuditLoss(run, msg)
	case !e.Finished:
		printable.Fprintf(m.diag(), "ahp-tap: the audit of this link had not finished within --drain (%v) of the backend's exit; the log and capture are completed after ahp-tap exits\n", run.sf.drain)
	}
}

// logAuditLoss writes a TAP-1 finding about this link to the violation
// log, when there is one of its own (not stderr, which had the line),
// through the way out (package output) as every finding.
func (m *Main) logAuditLoss(run *stdioRun, msg string) {
	if run.sf == nil || run.sf.log == "" || run.sf.log == "-" {
		return
	}
	o, err := output.Open(output.Config{Name: "stdio", Diag: io.Discard, Log: run.sf.log, LogBestEffort: true})
	if err != nil {
		return
	}
	f := tap.TapIncomplete.At(nil, tap.Warn, "", "%s", msg)
	f.Conn, f.Time = fmt.Sprintf("stdio:%d", os.Getpid()), time.Now()
	o.Sink().Write(f)
	_ = o.Close(time.Now().Add(minSinkClose))
}

// refuseUnsafeState refuses a --state directory that cannot be trusted
// (one every user may write to, one of another user's, one that cannot be
// written) with one line on stderr, and goes on without it (issue 28 item
// 7): the audit, the log and the capture still run, only the state is not
// used. It returns the flags for the audit process, which then does not
// use it either.
func (m *Main) refuseUnsafeState(sf *stdioFlags, flagArgs []string) []string {
	if sf.state == "" {
		return flagArgs
	}
	if _, err := stdio.OpenDirStore(sf.state, io.Discard); err != nil {
		printable.Fprintf(m.diag(), "ahp-tap stdio: --state: %v; the state is not used (retries across processes are not checked)\n", err)
		sf.state = ""
		return append(slices.Clip(flagArgs), "--state=")
	}
	return flagArgs
}
