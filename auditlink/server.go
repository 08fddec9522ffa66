package auditlink

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/safefile"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Bounds of the shared audit process.
const (
	// Idle is how long the shared audit process stays up with no link.
	Idle = 2 * time.Second
	// MaxLinks bounds the links one shared audit process serves at once
	// (each holds a few MiB at most); a tap past it gets an audit
	// process of its own.
	MaxLinks = 64
	// Bound bounds an audit's life after its link ended: it finishes by
	// then whatever is left (the log or capture may be incomplete).
	Bound = 5 * time.Second
	// SinkClose bounds the flushing of the log, the capture and the
	// OTLP export of a link that was killed, once its frames are checked.
	SinkClose = Bound - time.Second
)

// An Audit is one link's audit: the session its records feed, and how to
// close its sinks.
type Audit struct {
	Session *tap.Session
	// CloseSinks closes the session's sinks (log, capture, OTLP export)
	// within d, after the session was closed.
	CloseSinks func(d time.Duration)
}

// Close closes the session and then the sinks of a link whose Feed ended
// with out: by the end record's deadline (a clean end; at least minClose
// when it has passed already), or within SinkClose (a killed link, whose
// audit has no deadline but Bound).
func (a *Audit) Close(out Outcome, minClose time.Duration) {
	a.Session.Close()
	d := SinkClose
	if out.Clean && !out.Result.Deadline.IsZero() {
		d = max(time.Until(out.Result.Deadline), minClose)
	}
	if a.CloseSinks != nil {
		a.CloseSinks(d)
	}
}

// A Server is the shared audit process: it serves each link that
// connects to its socket as that tap's audit process would, with one
// Audit per link.
type Server struct {
	// Key is the rendezvous key the taps must say in their hello.
	Key string
	// Open makes the audit of the link conn; notices for that tap's
	// stderr go to diag. It may wait (the rules load in the background).
	Open func(conn string, diag io.Writer) (*Audit, error)
	// Reader bounds each link's queue.
	Reader ReaderConfig
	// Priority is the audit threads'.
	Priority stdio.Priority
	// Reserve is what each link's audit keeps of its deadline to close
	// its sinks (Feed).
	Reserve time.Duration
	// MinClose is what the sinks get once the deadline has passed.
	MinClose time.Duration
	// Log takes the server's own failures (the .err file).
	Log io.Writer

	mu    sync.Mutex
	links int       // links accepted and not yet finished
	since time.Time // when links last became 0
}

// Serve listens on sock (made 0600) until it has been idle for Idle, then
// removes the socket under lock (only if it is still its own), serves the
// links that connected meanwhile, and returns once they are finished.
// ready (may be nil) is written one byte and closed once sock listens.
func (s *Server) Serve(sock, lock string, ready *os.File) error {
	if s.Log == nil {
		s.Log = io.Discard
	}
	old := unix.Umask(0o177) // the socket is 0600 from the start
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(false) // only our own socket is removed, under the lock
	_ = os.Chmod(sock, 0o600)
	var ours unix.Stat_t
	_ = unix.Lstat(sock, &ours)
	fmt.Fprintf(s.Log, "ahp-tap: %s shared audit process %d started for %s\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), sock)
	if ready != nil {
		ready.Write([]byte{1})
		ready.Close()
	}
	s.since = time.Now()
	for {
		_ = ln.SetDeadline(time.Now().Add(Idle / 4))
		c, err := ln.AcceptUnix()
		if err == nil {
			s.accept(c)
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			printable.Fprintf(s.Log, "ahp-tap: shared audit process: %v\n", err)
			break
		}
		if s.idle() {
			break
		}
	}
	s.shutdown(ln, sock, lock, &ours)
	return nil
}

// idle reports whether the server has had no link for Idle.
func (s *Server) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.links == 0 && time.Since(s.since) >= Idle
}

// shutdown removes the socket (if it is still ours) under the lock, so
// that no tap connects any more; serves the links that connected before;
// and returns once every link is finished.
func (s *Server) shutdown(ln *net.UnixListener, sock, lock string, ours *unix.Stat_t) {
	lf, _, err := safefile.OpenAppend(lock)
	if err == nil {
		_ = FlockWithin(lf, Bound)
	}
	var st unix.Stat_t
	if unix.Lstat(sock, &st) == nil && st.Ino == ours.Ino && st.Dev == ours.Dev {
		unix.Unlink(sock)
	}
	// Links that connected before the socket went are served.
	for {
		_ = ln.SetDeadline(time.Now().Add(10 * time.Millisecond))
		c, err := ln.AcceptUnix()
		if err != nil {
			break
		}
		s.accept(c)
	}
	ln.Close()
	if lf != nil {
		lf.Close() // unlocks: a tap may start the next server while these links finish
	}
	for {
		s.mu.Lock()
		n := s.links
		s.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// accept serves c on a goroutine of its own, or refuses it past MaxLinks.
func (s *Server) accept(c *net.UnixConn) {
	s.mu.Lock()
	full := s.links >= MaxLinks
	if !full {
		s.links++
	}
	s.mu.Unlock()
	sc := &serverConn{c: c}
	if full {
		sc.send(MsgRefused, []byte(fmt.Sprintf("it serves %d links already", MaxLinks)))
		c.Close()
		return
	}
	go func() {
		defer func() {
			s.mu.Lock()
			s.links--
			if s.links == 0 {
				s.since = time.Now()
			}
			s.mu.Unlock()
		}()
		s.serve(sc)
	}()
}

// serverConn is the server's end of one link: its messages to the tap,
// and a writer of notices for the tap's stderr.
type serverConn struct {
	c  *net.UnixConn
	mu sync.Mutex
}

func (sc *serverConn) send(kind byte, payload []byte) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	// A tap that stopped reading (killed) never holds the server up.
	_ = sc.c.SetWriteDeadline(time.Now().Add(time.Second))
	return WriteMsg(sc.c, kind, payload)
}

// Write implements io.Writer: a notice for the tap's stderr.
func (sc *serverConn) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		n := min(len(p), MaxMessage)
		if err := sc.send(MsgDiag, p[:n]); err != nil {
			return 0, err
		}
		p = p[n:]
	}
	return total, nil
}

// serve runs one link as the audit process of that tap would: read the
// link, feed one session, write the log, capture and state, then say so.
func (s *Server) serve(sc *serverConn) {
	c := sc.c
	defer c.Close()
	uid, err := -1, error(nil)
	if rc, e := c.SyscallConn(); e == nil {
		_ = rc.Control(func(fd uintptr) { uid, err = peerUID(int(fd)) })
	}
	if err != nil || uid != os.Getuid() {
		return // another user's process (the socket is 0600 in a directory of ours): not ours to serve
	}
	_ = c.SetReadDeadline(time.Now().Add(ReadyWait))
	br := bufio.NewReaderSize(c, MaxHello)
	hello, err := ReadHello(br, s.Key)
	if err != nil {
		sc.send(MsgRefused, []byte(err.Error()))
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	rcfg := s.Reader
	rcfg.OwnThread = true // the feeding thread is lowered below, not the reading
	rd := NewReader(br, rcfg)
	if sc.send(MsgReady, nil) != nil {
		return
	}
	// A link that ends before its first record is a tap that gave up
	// waiting for our answer and audits the event itself: no session.
	if !rd.waitFirst() {
		return
	}
	a, err := s.Open(hello.Conn, sc)
	if err != nil {
		rd.Discard() // the forwarding process never waits on us
		printable.Fprintf(sc, "ahp-tap: %v\n", err)
		sc.send(MsgDone, nil)
		return
	}
	stdio.AuditThread(s.Priority) // this goroutine's thread, which ends with it
	out := Feed(rd, a.Session, hello.Conn, s.Reserve)
	// The link is over: finish within the bound, whatever is left.
	done := make(chan struct{})
	go func() {
		a.Close(out, s.MinClose)
		close(done)
	}()
	select {
	case <-done:
		sc.send(MsgDone, nil)
	case <-time.After(Bound):
		printable.Fprintf(s.Log, "ahp-tap: link %s was not finished within %v of its end; its log or capture may be incomplete\n", hello.Conn, Bound)
		printable.Fprintf(sc, "ahp-tap: the shared audit process did not finish this link within %v of its end; the log or capture may be incomplete\n", Bound)
	}
}

// waitFirst waits until the link has a record, and reports false when it
// ended before its first one.
func (rd *Reader) waitFirst() bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	for rd.head == len(rd.q) && rd.err == nil {
		rd.cond.Wait()
	}
	return rd.head < len(rd.q)
}
