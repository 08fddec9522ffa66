package stdiotap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/internal/gctune"
	"github.com/ahp-tap/ahp-tap/internal/linkconf"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/stdio"
)

// The stdio tap is two processes (docs/stdio.md, "Process model"): the
// forwarding process the harness starts, which shares the harness's
// process group and fate, and an audit process in a session of its own,
// which reads the audit copies from a pipe, runs the checks and writes the
// log, capture and summary. The link between them, its protocol and the
// shared audit process of per_event taps are package auditlink's; this
// file is their wiring: a Config in, a session and its way out per link.

// WorkerCommand is the hidden ahp-tap subcommand that runs the audit
// process (RunAuditProcess): `ahp-tap __audit-process --audit-conn CONN
// --audit-fd FD --ready-fd FD STDIO-FLAGS...`.
const WorkerCommand = "__audit-process"

// ServerCommand is the hidden ahp-tap subcommand that runs the shared
// audit process (RunAuditServer): `ahp-tap __audit-server --audit-key KEY
// --socket PATH --lock PATH --ready-fd FD STDIO-FLAGS...`.
const ServerCommand = "__audit-server"

// Bound bounds an audit process's life after its link ended.
const Bound = auditlink.Bound

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
func linkBacklog(c *Config) int64 {
	backlog := int64(max(c.Queue, 1)) * 2048
	if !c.QueueSet {
		backlog = max(backlog, c.Budget/2)
	}
	return backlog
}

// linkReader bounds the audit process's queue of records read off the
// link and not yet checked: as much as the forwarding process's backlog,
// and the 4 MiB it always had, so that reading the link as fast as it
// comes (the end record is never stuck behind a full pipe) keeps the
// buffering a burst had; a record counts 128 bytes besides its payload.
func linkReader(c *Config) auditlink.ReaderConfig {
	b := auditlink.DefaultReaderBytes + linkBacklog(c)
	return auditlink.ReaderConfig{Bytes: b, Depth: int(max(int64(c.Queue), b/128))}
}

// IgnoreSignals makes an audit process deaf to the signals meant for the
// forwarding process; a closed stderr is an error on write, not a death.
// An audit process calls it first, before it reads its flags.
func IgnoreSignals() {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT)
}

// RunAuditProcess is the audit process of one forwarding process: it
// reads the audit link on fd until it ends, feeding one tap.Session of
// the link conn; a clean end is finished by the forwarding process's
// deadline (its --drain), a killed link within Bound. readyFD (-1: none)
// is told once the link is being read. Its errors are one line each.
func RunAuditProcess(c Config, conn string, fd, readyFD int) error {
	IgnoreSignals() // signals are for the forwarding process
	// This process leads a session of its own, which the scheduler runs
	// as a group: lower the group, or the threads' priority is moot.
	stdio.AuditSession(c.Priority)
	// Read the link through the runtime's poller. A read that blocks in
	// the kernel instead has the runtime's monitor take its thread's P and
	// wake another thread for it, record after record: a sixth of the
	// audit process's CPU one request at a time (perf, BENCHMARKS.md).
	_ = syscall.SetNonblock(fd, true)
	link := os.NewFile(uintptr(fd), "audit-link")
	if link == nil {
		return fmt.Errorf("%s: no audit link on fd %d", WorkerCommand, fd)
	}
	defer link.Close()
	// Read the link first, then say so: the rules load while the copies
	// queue here rather than in the pipe. The reader's thread is made
	// before the priority drops; with --audit-priority idle it drops too
	// (stdio.AuditProcess).
	rcfg := linkReader(&c)
	rd := auditlink.NewReader(link, rcfg)
	auditlink.SignalReady(readyFD)
	if c.Priority == stdio.PriorityLow {
		stop := make(chan struct{})
		defer close(stop)
		go stdio.GroupGovernor(uintptr(fd), rd.Queued, rd.Active(), stop)
	}
	l, err := linkconf.Load(c.Files)
	if err != nil {
		rd.Discard() // the forwarding process never waits on us
		return err
	}
	c.Link, c.AuditOff = l, true // no forwarding here: only the session is used
	run, err := (&aids{}).openLink(&c, conn, true, c.Diag, c.Stderr)
	if err != nil {
		rd.Discard()
		return err
	}
	// The audit process holds a few bounded buffers (the reader's queue,
	// the audit copy of a line) and the conversation's bounded state: the
	// limit keeps the heap near them, and collections stay rare below it.
	gctune.Audit(48<<20 + rcfg.Bytes)
	stdio.AuditProcess(c.Priority)
	out := auditlink.Feed(rd, run.session, conn, auditReserve(c.Drain))
	// From here the link is over: exit within the bound, whatever is left.
	bound := time.AfterFunc(Bound, func() {
		printable.Fprintf(c.Stderr, "ahp-tap: the audit process did not finish within %v of the link's end; the log or capture may be incomplete\n", Bound)
		os.Exit(3)
	})
	defer bound.Stop()
	a := auditlink.Audit{Session: run.session, CloseSinks: run.closeWithin}
	a.Close(out, MinSinkClose)
	if c.Summary {
		if out.Clean {
			res := out.Result
			res.NotAudited = run.session.NotAudited()
			run.writeSummary(c.Stderr, res)
		} else {
			fmt.Fprintln(c.Stderr, "ahp-tap: the forwarding process ended without closing the audit link (it was killed); the audit process checked everything it had received")
			run.summary(run.session.NotAudited()).WriteText(c.Stderr)
		}
	}
	return nil
}

// The shared audit process. A per_event backend is one ahp-tap per event;
// with --state DIR every one of them sends its audit link to one audit
// process (auditlink.Server), which serves each link as the audit process
// of that event would, so that the rules' start-up is paid once rather
// than per event. Its rendezvous is in DIR (auditlink.Rendezvous), keyed
// by a hash of everything that makes one audit differ from another
// (auditlink.SharedKey), so taps configured differently never share a
// server.

// sharedAuditWanted reports whether this tap's audit goes to the shared
// audit process: --shared-audit, a per_event lifecycle, --state, and an
// audit that writes nothing to the tap's own stderr (the summary, the
// console and --log - belong to this event's stderr, which only an audit
// process of its own holds).
func sharedAuditWanted(c *Config) bool {
	cfg := c.Link.Config
	cfg.Lifecycle = c.Lifecycle
	return c.SharedAudit && c.State != "" && cfg.Resolved().Lifecycle == "per_event" &&
		!c.Summary && !c.Console && c.Log != "-" && runtime.GOOS == "linux"
}

// connectSharedAudit connects this tap's audit link to the shared audit
// process of its --state directory, starting one when none answers.
func connectSharedAudit(c *Config, conn string, backlog int) (*auditlink.Link, error) {
	key, err := auditlink.SharedKey(c.Version, c.FlagArgs, c.Files.Registration)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r := auditlink.Rendezvous{Dir: c.State, Key: key, Diag: c.Diag,
		Argv: func(p auditlink.Paths) []string {
			return append([]string{exe, ServerCommand, "--audit-key", key, "--socket", p.Sock,
				"--lock", p.Lock, "--ready-fd", "3"}, c.FlagArgs...)
		}}
	return r.Connect(conn, backlog)
}

// RunAuditServer is the shared audit process: it serves the audit links
// of the taps sharing key on the socket sock, under the lock lock, until
// it is idle; readyFD (-1: none) is told once the socket listens. Each
// link's notices go back to its tap's stderr; the server's own go to
// c.Stderr.
func RunAuditServer(c Config, key, sock, lock string, readyFD int) error {
	IgnoreSignals()
	var a aids
	a.metrics(&c, c.Stderr)  // one endpoint for every link this process serves
	a.liveView(&c, c.Stderr) // one live view for every link this process serves
	// The rules load while the server already listens; each link's
	// audit waits for them.
	rulesLoaded := make(chan struct{})
	var l *linkconf.Loaded
	go func() {
		defer close(rulesLoaded)
		var err error
		if l, err = linkconf.Load(c.Files); err != nil {
			printable.Fprintf(c.Stderr, "ahp-tap: shared audit process: %v\n", err)
			l = nil
		}
	}()
	srv := &auditlink.Server{
		Key: key, Priority: c.Priority, Log: c.Stderr,
		Reserve: auditReserve(c.Drain), MinClose: MinSinkClose,
		Open: func(conn string, diag io.Writer) (*auditlink.Audit, error) {
			<-rulesLoaded
			if l == nil {
				return nil, errors.New("the shared audit process cannot load the rules; see the .err file in --state")
			}
			lc := c
			lc.Link, lc.AuditOff = l, true                      // no forwarding here: only the session is used
			run, err := a.openLink(&lc, conn, true, diag, diag) // this tap's notices go back to its stderr
			if err != nil {
				return nil, err
			}
			return &auditlink.Audit{Session: run.session, CloseSinks: run.closeWithin}, nil
		},
	}
	gctune.Audit(64 << 20)
	var ready *os.File
	if readyFD >= 0 {
		ready = os.NewFile(uintptr(readyFD), "audit-ready")
	}
	return srv.Serve(sock, lock, ready)
}
