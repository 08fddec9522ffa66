package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// The stdio tap is two processes (docs/stdio.md, "Process model"): the
// forwarding process the harness starts, which shares the harness's
// process group and fate, and an audit process in a session of its own,
// which reads the audit copies from a pipe, runs the checks and writes the
// log, capture and summary. A harness that SIGKILLs the forwarding
// process's group (the AHP SDK does, on Close and after a failed exchange)
// leaves the audit process running: it sees the pipe end, finishes every
// frame it received, records a `killed` note, flushes and exits.

// auditWorkerCommand is the hidden subcommand that runs the audit process.
const auditWorkerCommand = "__audit-process"

// Bounds of the audit process's life after the link ends.
const (
	// auditEndWait bounds how long the forwarding process waits for room
	// in the pipe for its last records.
	auditEndWait = time.Second
	// auditExitWait bounds how long the forwarding process waits for the
	// audit process to finish (log, capture and summary written) before
	// it exits itself.
	auditExitWait = 5 * time.Second
	// auditReadyWait bounds how long the forwarding process waits for the
	// audit process to start reading the link before it starts CMD.
	auditReadyWait = 2 * time.Second
	// auditBound bounds the audit process's life after the link ended:
	// it exits by then whatever is left to do.
	auditBound = 5 * time.Second
	// auditSinkClose bounds the flushing of the log, the capture and
	// the OTLP export once the link's frames are checked.
	auditSinkClose = auditBound - time.Second
)

// auditLink is the forwarding process's end of its audit process.
type auditLink struct {
	mirror *stdio.PipeMirror
	cmd    *exec.Cmd     // nil for the shared audit process
	done   chan struct{} // closed when the audit process has exited, or the shared one has written the link
	conn   *os.File      // the shared audit process's messages; nil for an audit process of its own
}

// startAuditProcess starts the audit process with the stdio flags the
// forwarding process was given (flagArgs) for the link named conn.
func (m *Main) startAuditProcess(flagArgs []string, conn string, backlog int) (*auditLink, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pm, r, err := stdio.NewPipeMirror(backlog)
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		r.Close()
		pm.Close()
		return nil, err
	}
	defer readyR.Close()
	args := append([]string{auditWorkerCommand, "--audit-conn", conn, "--audit-fd", "3", "--ready-fd", "4"}, flagArgs...)
	cmd := exec.Command(exe, args...)
	cmd.ExtraFiles = []*os.File{r, readyW}
	cmd.Stderr = m.Stderr // findings with --log -, the summary, its own notices
	// Its own session: a signal to the harness's process group (or the
	// terminal's) never reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	r.Close()
	readyW.Close()
	if err != nil {
		pm.Close()
		return nil, err
	}
	// Wait (bounded) until the audit process reads the link, so that the
	// copies of the first exchanges do not overflow the pipe while it
	// starts; past the bound they wait in this process's backlog.
	_ = readyR.SetReadDeadline(time.Now().Add(auditReadyWait))
	_, _ = readyR.Read(make([]byte, 1))
	l := &auditLink{mirror: pm, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		_ = cmd.Wait()
	}()
	return l, nil
}

// end tells the audit process the link ended cleanly with res, and waits
// (bounded) for it to finish, so that the log, capture and summary are
// complete when the forwarding process exits.
func (l *auditLink) end(res stdio.Result) {
	l.mirror.End(res, auditEndWait)
	select {
	case <-l.done:
	case <-time.After(auditExitWait):
	}
	if l.conn != nil {
		l.conn.Close()
	}
}

// runAuditProcess is the audit process: `ahp-tap __audit-process
// --audit-conn CONN --audit-fd FD STDIO-FLAGS...`. It reads the audit link
// on FD until it ends, feeding one tap.Session, and exits within
// auditBound of the end.
func (m *Main) runAuditProcess(_ context.Context, args []string) error {
	// Signals are for the forwarding process; a closed stderr is an
	// error on write, not a death.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT)
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	var sf stdioFlags
	sf.register(fs, m.Stderr)
	conn := fs.String("audit-conn", "", "the link's name")
	fd := fs.Int("audit-fd", 3, "the audit link's file descriptor")
	readyFD := fs.Int("ready-fd", -1, "a file descriptor to write to once the link is being read")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	link := os.NewFile(uintptr(*fd), "audit-link")
	if link == nil {
		return usageError("%s: no audit link on fd %d", auditWorkerCommand, *fd)
	}
	defer link.Close()
	// Drain the link first, then say so: the rules load while the
	// copies queue here rather than in the pipe. The drain's thread is
	// made before the priority drops, and keeps the process's.
	next := drainLink(stdio.NewRecordReader(link), sf.queue)
	if *readyFD >= 0 {
		if f := os.NewFile(uintptr(*readyFD), "audit-ready"); f != nil {
			f.Write([]byte{1})
			f.Close()
		}
	}
	l, err := sf.load()
	if err != nil {
		for _, err := next(); err == nil; _, err = next() {
		} // the forwarding process never waits on us
		return err
	}
	prio, _ := stdio.ParsePriority(sf.priority)
	sf.conn, sf.audit = *conn, auditOff // no forwarding here: only the session is used
	run, err := m.prepareStdio(&sf, l, []string{"true"}, prio)
	if err != nil {
		for _, err := next(); err == nil; _, err = next() {
		}
		return err
	}
	// The audit process holds at most a few bounded buffers (the queue
	// above, the audit copy of a line): keep the heap near them.
	debug.SetMemoryLimit(48 << 20)
	debug.SetGCPercent(50)
	stdio.AuditThread(prio)
	res, clean := feedAuditLink(next, run.session, *conn)
	// From here the link is over: exit within the bound, whatever is left.
	bound := time.AfterFunc(auditBound, func() {
		fmt.Fprintf(m.Stderr, "ahp-tap: the audit process did not finish within %v of the link's end; the log or capture may be incomplete\n", auditBound)
		os.Exit(3)
	})
	defer bound.Stop()
	run.session.Close()
	// Off the forwarding path, the sinks get most of the bound, not
	// the forwarding process's minSinkClose: a loaded machine must not
	// cost findings the log could still take.
	run.closeWithin(auditSinkClose)
	if sf.summary {
		if clean {
			res.NotAudited = run.session.NotAudited()
			run.writeSummary(m.Stderr, res)
		} else {
			fmt.Fprintln(m.Stderr, "ahp-tap: the forwarding process ended without closing the audit link (it was killed); the audit process checked everything it had received")
			s := run.collector.Summary()
			s.NotAudited = run.session.NotAudited()
			s.LogDropped = run.log.Dropped()
			s.NotPossible = notPossible(run.session.NotChecked())
			s.WriteText(m.Stderr)
		}
	}
	return nil
}

// feedAuditLink feeds every record of the link to s, cutting the streams
// into frames as the in-process tap does, and reports how the link ended:
// with the forwarding process's result (clean), or without it (killed:
// a `killed` note is fed last).
func feedAuditLink(next func() (stdio.Record, error), s *tap.Session, conn string) (res stdio.Result, clean bool) {
	fr := s.NewFramer(s.Frame, s.Lost)
	var last time.Time
	for {
		rec, err := next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				s.Note(tap.Note{Kind: tap.NoteUpstreamFailure, Time: time.Now(), Conn: conn,
					Detail: "reading the audit link: " + err.Error()})
			}
			break
		}
		last = rec.Time
		if rec.Lost > 0 {
			s.Lost(rec.Lost)
		}
		if rec.Loss && rec.Dir != 0 {
			fr.Lost(conn, rec.Dir)
		}
		switch rec.Kind {
		case stdio.RecordChunk:
			fr.Write(conn, rec.Dir, rec.Time, rec.Payload)
		case stdio.RecordNote:
			var n tap.Note
			if json.Unmarshal(rec.Payload, &n) != nil {
				continue
			}
			if n.Kind == tap.NoteEOF {
				fr.End(conn, n.Dir, n.Time) // a last line without "\n" is a frame too
			}
			s.Note(n)
		case stdio.RecordEnd:
			clean = json.Unmarshal(rec.Payload, &res) == nil
		}
	}
	if !clean {
		// A line the forwarding process was in the middle of is not a
		// frame: nothing was said about how it would have ended.
		now := time.Now()
		s.Note(tap.Note{Kind: tap.NoteKilled, Time: now, Conn: conn,
			Detail: "the forwarding process ended without closing the audit link (killed, e.g. its process group was sent SIGKILL); last record at " + last.UTC().Format(time.RFC3339Nano)})
	}
	return res, clean
}

// auditBufferBytes bounds the records read off the link and not yet
// checked: the pipe alone (1 MiB) is a small buffer for a burst, and the
// forwarding process's backlog holds up to 8 MiB more.
const auditBufferBytes = 4 << 20

// drainLink reads the link on a goroutine of its own, as fast as it
// comes, into a queue of at most auditBufferBytes of payload, so that the
// pipe stays free while the checks (at the audit priority) catch up; past
// the bound (depth records, --audit-queue) it stops reading, and the
// forwarding process queues, then drops. next
// returns the records in order, then the error that ended the link.
func drainLink(rr *stdio.RecordReader, depth int) (next func() (stdio.Record, error)) {
	type item struct {
		rec stdio.Record
		err error
	}
	q := make(chan item, max(depth, 1))
	var queued atomic.Int64
	started := make(chan struct{})
	go func() {
		// A thread of its own, made now at the process's priority, so
		// that lowering the checks' thread never slows the draining.
		runtime.LockOSThread()
		close(started)
		for {
			rec, err := rr.Next()
			for queued.Load() > auditBufferBytes {
				time.Sleep(time.Millisecond)
			}
			queued.Add(int64(len(rec.Payload)))
			q <- item{rec, err}
			if err != nil {
				return
			}
		}
	}()
	<-started
	return func() (stdio.Record, error) {
		it := <-q
		queued.Add(-int64(len(it.rec.Payload)))
		return it.rec, it.err
	}
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
	// The copies waiting in this process for room in the pipe are
	// bounded in bytes: --audit-queue FRAMES at about 2 KiB a frame when
	// it is given, else the larger of that (8 MiB) and half the audit
	// budget (32 MiB by default). 8 MiB dropped frames at 5,000
	// intercepts/s whenever the audit process stalled for about half a
	// second on a shared machine (BENCHMARKS.md, Audited fraction).
	backlog := int64(max(sf.queue, 1)) * 2048
	if !sf.queueSet {
		backlog = max(backlog, sf.budgetBytes/2)
	}
	var link *auditLink
	var err error
	if sharedAuditWanted(sf, l) { // sharedaudit.go
		if link, err = m.connectSharedAudit(sf, flagArgs, conn, int(backlog)); err != nil {
			fmt.Fprintf(m.Stderr, "ahp-tap: the shared audit process of --state is not used (%v); this event gets an audit process of its own\n", err)
		}
	}
	if link == nil {
		link, err = m.startAuditProcess(flagArgs, conn, int(backlog))
	}
	if err != nil {
		fmt.Fprintf(m.Stderr, "ahp-tap: cannot start the audit process (%v); auditing in this process, which a SIGKILL of its group loses\n", err)
		return m.prepareStdio(sf, l, argv, prio)
	}
	r := &stdioRun{collector: &report.Collector{Limit: 1}, diag: m.Stderr, audit: link}
	r.tap = stdio.New(stdio.Config{
		Command: argv[0], Args: argv[1:],
		Stdin: m.Stdin, Stdout: m.Stdout, Stderr: m.Stderr,
		Mirror: link.mirror, MaxAuditLine: sf.maxLine, Conn: conn,
		Hash: sf.summary, Diag: m.diag(), AuditPriority: prio,
		Drain: sf.drain, Watchdog: watchdogArgv(), // issue 8 items 3, 10
	})
	return r, nil
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
		fmt.Fprintf(m.diag(), "ahp-tap stdio: --state: %v; the state is not used (retries across processes are not checked)\n", err)
		sf.state = ""
		return append(slices.Clip(flagArgs), "--state=")
	}
	return flagArgs
}
