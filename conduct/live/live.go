// Package live carries the judged frames of every tapped link of one
// registration to one process holding the registration's conduct
// timeline (issue 23, live conduct). The audit of each link (a tap's own
// audit process, or the shared audit process of per_event taps) is a
// Client; the timeline's process is a Server, started by the first
// Client that finds none, as the shared audit process is:
//
//	DIR/conduct.sock             the server's socket (0600)
//	DIR/conduct.lock             flock(2): one process at a time starts a server
//	DIR/conduct.err              the server's stderr (its own failures)
//	DIR/conduct.violations.log   the conduct findings (the violation log format)
//	DIR/conduct.pid              the server's pid while it runs (gone once its findings are written)
//	DIR/conduct.started          touched at each server start, once conduct.pid is written
//	DIR/conduct.tapped.json      the hooks tapped with --conduct (written by `wrap --conduct`)
//
// A Client never blocks the audit it serves: facts go through a queue
// bounded in bytes; what does not fit is dropped and counted, and the
// server is told, so that the events concerned are not judged rather than
// judged on a partial chain. The server orders the facts of every link by
// their frames' times within a window before the timeline takes them.
package live

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/conduct"
	"github.com/ahp-tap/ahp-tap/internal/safefile"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Version is the protocol of the hello line.
const Version = 1

// Bounds of a Client.
const (
	// QueueBytes bounds the facts a Client holds for the server.
	QueueBytes = 8 << 20
	// MaxFact bounds one fact (a frame past it is not carried: its
	// event is then not judged).
	MaxFact = 4 << 20
	// StartWait bounds connecting to, or starting, a server.
	StartWait = 3 * time.Second
	// MaxBuffered bounds the bytes of facts a server holds for ordering
	// (facts stamped far ahead of its clock would otherwise wait).
	MaxBuffered = 64 << 20
)

// Paths are the rendezvous files in a conduct directory.
type Paths struct{ Sock, Lock, Err, Log, Pid, Started, Tapped string }

// PathsFor returns the files of the conduct directory dir.
func PathsFor(dir string) Paths {
	p := filepath.Join(dir, "conduct")
	return Paths{Sock: p + ".sock", Lock: p + ".lock", Err: p + ".err", Log: p + ".violations.log", Pid: p + ".pid", Started: p + ".started", Tapped: p + ".tapped.json"}
}

// hello is the first line a Client sends.
type hello struct {
	V    int    `json:"v"`
	Key  string `json:"key"` // the registration's digest: one server per registration
	Hook string `json:"hook"`
	// Clocked says the link tells its clock (ClientConfig.Clocked): the
	// server's facts wait for it.
	Clocked bool `json:"clocked,omitempty"`
}

// line is one line after the hello: a fact, a count of facts lost, or
// the time the link's audit has judged every frame read before (its
// clock: the link will send no fact older than it).
type line struct {
	Fact    *conduct.Fact `json:"fact,omitempty"`
	Lost    uint64        `json:"lost,omitempty"`
	Through *time.Time    `json:"through,omitempty"`
}

// ClientConfig configures a Client.
type ClientConfig struct {
	Dir  string // the conduct directory
	Key  string // the registration's digest
	Hook string // the hook this link taps
	// Argv is the command line that starts a server; it gets a ready
	// pipe as fd 3 (one byte once it listens), the error file as stderr
	// and a session of its own.
	Argv []string
	// Diag takes one-line notices (a server that cannot be reached).
	Diag io.Writer
	// Clocked says the link's feeder tells the client its clock while
	// the link is quiet (Clock; the HTTP tap's auditor and the stdio
	// audit processes do). The client then joins a running server from
	// the start, before its first fact, and the server holds the other
	// links' facts until this link's clock has passed them: a link whose
	// audit lags (it runs at a low priority) is waited for rather than
	// judged out of order.
	Clocked bool
}

// A Client sends the facts of one link to the registration's server. It
// starts a server at the first fact, so a session that is never fed never
// starts one. A Clocked client joins a server already running from the
// start, and tells it how far its link's audit has come (Clock).
type Client struct {
	cfg ClientConfig

	mu      sync.Mutex
	cond    *sync.Cond
	q       [][]byte
	bytes   int
	lost    uint64
	through time.Time // the link's clock: every frame read before it was judged
	sent    time.Time // the clock last sent
	closed  bool
	running bool // run was started (at the first fact, or once a server answered)
	probing bool // probe is looking for a running server
	done    chan struct{}
}

// NewClient returns a Client; nothing is connected yet. A Clocked one
// looks for a running server every probeEvery until it runs or is closed.
func NewClient(cfg ClientConfig) *Client {
	c := &Client{cfg: cfg, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	if cfg.Clocked {
		c.probing = true
		go c.probe()
	}
	return c
}

// Judged implements tap.Watcher: it never blocks.
func (c *Client) Judged(f *tap.Frame, x *tap.Exchange) {
	if !conduct.Relevant(f, x) {
		// Not a fact, but the link's clock goes on: a link busy with
		// other frames is never quiet enough to be told the time.
		c.mu.Lock()
		if f.Time.After(c.through) {
			c.through = f.Time
			if c.running && c.through.Sub(c.sent) >= tap.QuietClock {
				c.cond.Signal()
			}
		}
		c.mu.Unlock()
		return
	}
	b, err := json.Marshal(line{Fact: ptr(conduct.FactOf(c.cfg.Hook, f, x))})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if err != nil || len(b) > MaxFact || c.bytes+len(b) > QueueBytes {
		c.lost++
	} else {
		c.q = append(c.q, append(b, '\n'))
		c.bytes += len(b) + 1
	}
	if !c.running {
		c.running = true
		go c.run(nil)
	}
	c.cond.Signal()
}

func ptr[T any](v T) *T { return &v }

// Clock implements tap.Clocker: it never blocks.
func (c *Client) Clock(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !t.After(c.through) {
		return
	}
	c.through = t
	if c.running {
		c.cond.Signal()
	}
}

// probeEvery is how often a Clocked client looks for a server before its
// first fact. It joins one that starts within probeEvery, so that the
// server waits for this link's facts even when its audit is too starved
// of CPU to get to them.
const probeEvery = 100 * time.Millisecond

// probe joins a server once one is running, until the client runs (a
// fact started one) or is closed.
func (c *Client) probe() {
	for {
		conn, err := join(c.cfg)
		c.mu.Lock()
		if c.running || c.closed {
			c.probing = false
			c.mu.Unlock()
			if conn != nil {
				conn.Close()
			}
			return
		}
		if err == nil {
			c.running, c.probing = true, false
			c.mu.Unlock()
			c.run(conn)
			return
		}
		c.mu.Unlock()
		time.Sleep(probeEvery)
	}
}

// Close sends what is queued, waiting at most d, and ends the connection.
func (c *Client) Close(d time.Duration) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	running := c.running
	c.cond.Signal()
	c.mu.Unlock()
	if !running {
		return // no fact: no connection
	}
	select {
	case <-c.done:
	case <-time.After(d):
		if c.cfg.Diag != nil {
			fmt.Fprintf(c.cfg.Diag, "ahp-tap: conduct: facts not sent within %v; the conduct timeline does not judge their events\n", d)
		}
	}
}

// run connects (unless conn is already connected) and sends the queue
// until Close.
func (c *Client) run(conn net.Conn) {
	defer close(c.done)
	var err error
	if conn == nil {
		conn, err = Connect(c.cfg)
	}
	if err != nil {
		if c.cfg.Diag != nil {
			fmt.Fprintf(c.cfg.Diag, "ahp-tap: conduct: %v; this link's conduct is not judged live\n", err)
		}
		c.mu.Lock()
		c.q, c.bytes, c.closed = nil, 0, true
		c.mu.Unlock()
		return
	}
	defer conn.Close()
	bw := bufio.NewWriterSize(conn, 64<<10)
	for {
		c.mu.Lock()
		for len(c.q) == 0 && c.lost == 0 && !c.closed && !c.through.After(c.sent) {
			c.cond.Wait()
		}
		q, lost, closed := c.q, c.lost, c.closed
		c.q, c.bytes, c.lost = nil, 0, 0
		var through *time.Time
		if c.through.After(c.sent) {
			c.sent = c.through
			through = ptr(c.through)
		}
		c.mu.Unlock()
		if lost > 0 {
			b, _ := json.Marshal(line{Lost: lost})
			bw.Write(append(b, '\n'))
		}
		for _, b := range q {
			bw.Write(b)
		}
		if through != nil {
			// After the facts: the clock vouches for them.
			b, _ := json.Marshal(line{Through: through})
			bw.Write(append(b, '\n'))
		}
		_ = conn.SetWriteDeadline(time.Now().Add(StartWait))
		if err := bw.Flush(); err != nil {
			if c.cfg.Diag != nil {
				fmt.Fprintf(c.cfg.Diag, "ahp-tap: conduct: the conduct timeline's process stopped reading (%v); this link's conduct is not judged live from here\n", err)
			}
			c.mu.Lock()
			c.q, c.bytes, c.closed = nil, 0, true
			c.mu.Unlock()
			return
		}
		if closed && len(q) == 0 && lost == 0 && through == nil {
			return
		}
	}
}

// Connect connects to the server of cfg.Dir, starting one when none
// answers, and says hello.
func Connect(cfg ClientConfig) (net.Conn, error) {
	if err := auditlink.CheckDir(cfg.Dir); err != nil {
		return nil, err
	}
	p := PathsFor(cfg.Dir)
	conn, err := dial(p.Sock)
	if err != nil {
		if conn, err = start(cfg, p); err != nil {
			return nil, err
		}
	}
	return sayHello(cfg, conn)
}

// join connects to the server of cfg.Dir if one is running, and says
// hello; it starts none.
func join(cfg ClientConfig) (net.Conn, error) {
	if err := auditlink.CheckDir(cfg.Dir); err != nil {
		return nil, err
	}
	conn, err := dial(PathsFor(cfg.Dir).Sock)
	if err != nil {
		return nil, err
	}
	return sayHello(cfg, conn)
}

func sayHello(cfg ClientConfig, conn net.Conn) (net.Conn, error) {
	b, _ := json.Marshal(hello{V: Version, Key: cfg.Key, Hook: cfg.Hook, Clocked: cfg.Clocked})
	_ = conn.SetWriteDeadline(time.Now().Add(StartWait))
	if _, err := conn.Write(append(b, '\n')); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

var errNoServer = errors.New("no conduct server answers")

// dial connects to the socket without following a link.
func dial(path string) (net.Conn, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, errNoServer
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("%s is not a socket of this user's", path)
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, errNoServer
	}
	return conn, nil
}

// start takes the lock and, unless another client started a server
// meanwhile, removes a stale socket and starts one.
func start(cfg ClientConfig, p Paths) (net.Conn, error) {
	lf, _, err := safefile.OpenAppend(p.Lock)
	if err != nil {
		return nil, fmt.Errorf("conduct lock: %v", err)
	}
	defer lf.Close()
	if err := auditlink.FlockWithin(lf, StartWait); err != nil {
		return nil, err
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	if conn, err := dial(p.Sock); err == nil || !errors.Is(err, errNoServer) {
		return conn, err
	}
	var st unix.Stat_t
	if unix.Lstat(p.Sock, &st) == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return nil, fmt.Errorf("%s is not a socket", p.Sock)
		}
		if err := unix.Unlink(p.Sock); err != nil {
			return nil, err
		}
	}
	ef, _, err := safefile.OpenAppend(p.Err)
	if err != nil {
		return nil, fmt.Errorf("conduct error file: %v", err)
	}
	defer ef.Close()
	if fi, err := ef.Stat(); err == nil && fi.Size() > auditlink.MaxErrFile {
		_ = ef.Truncate(0)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	cmd := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	cmd.Stderr = ef
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return nil, err
	}
	_ = cmd.Process.Release()
	_ = readyR.SetReadDeadline(time.Now().Add(StartWait))
	if _, err := readyR.Read(make([]byte, 1)); err != nil {
		return nil, fmt.Errorf("the conduct server did not start (see %s)", p.Err)
	}
	return dial(p.Sock)
}

// Server holds the registration's conduct timeline and serves the links.
type Server struct {
	Dir      string
	Key      string
	Timeline *conduct.Timeline
	// Window is how long a fact waits for facts of other links that are
	// earlier in time (the links' audits lag differently). A fact waits
	// longer while a link that tells its clock has not come as far, up
	// to MaxWindow (0: DefaultMaxWindow).
	Window    time.Duration
	MaxWindow time.Duration
	// Idle is how long the server stays up with no link.
	Idle time.Duration
	// Log takes the server's own failures.
	Log io.Writer
	// Finish, when set, runs once the timeline is closed and before the
	// pid file goes: it writes out what the timeline found (its sink is
	// asynchronous), so that a pid file gone means the findings are on
	// disk. Its error is Serve's.
	Finish func() error

	mu       sync.Mutex
	buf      []conduct.Fact // waiting for the window, in arrival order
	bufBytes int            // about the bytes buf holds
	links    int
	since    time.Time
	clocks   map[*linkClock]bool // of the links connected
	released time.Time           // the latest time of a fact handed to the timeline
	late     uint64              // facts that came after later facts were handed over
}

// linkClock is how far a connected link has come.
type linkClock struct {
	through time.Time // its latest fact or clock
	clocked bool      // it tells its clock: the other links' facts wait for it
}

// DefaultMaxWindow bounds how long a fact waits for a link that lags.
const DefaultMaxWindow = 10 * time.Second

// Serve listens until idle, then judges what is left, runs Finish and
// returns. ready (may be nil) gets one byte once the socket listens. The
// pid file is there from before ready until after Finish.
func (s *Server) Serve(ready *os.File) error {
	p := PathsFor(s.Dir)
	ln, err := net.Listen("unix", p.Sock)
	if err != nil {
		return err
	}
	_ = os.Chmod(p.Sock, 0o600)
	if f, _, err := safefile.OpenAppend(p.Pid); err == nil {
		_ = f.Truncate(0)
		fmt.Fprintln(f, strconv.Itoa(os.Getpid()))
		f.Close()
	}
	defer os.Remove(p.Pid)
	markStarted(p.Started)
	if ready != nil {
		ready.Write([]byte{1})
		ready.Close()
	}
	s.since = time.Now()
	s.mu.Lock()
	s.clocks = map[*linkClock]bool{}
	s.mu.Unlock()
	stop := make(chan struct{})
	go s.release(stop)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.links++
			s.mu.Unlock()
			go s.serve(c)
		}
	}()
	for {
		time.Sleep(s.Idle / 4)
		if s.idle() && s.shutdown(ln, p) {
			break
		}
	}
	close(stop)
	s.mu.Lock()
	s.flush(time.Time{})
	if s.late > 0 {
		fmt.Fprintf(s.Log, "ahp-tap: conduct server: %d facts came after later facts of other links had been judged (their link's audit lagged more than the server waits, %v at most); the conduct verdicts on their events may be wrong: replay the links' captures for them\n", s.late, s.maxWindow())
	}
	s.mu.Unlock()
	s.Timeline.Close()
	if s.Finish != nil {
		return s.Finish()
	}
	return nil
}

func (s *Server) maxWindow() time.Duration { return cmp.Or(s.MaxWindow, DefaultMaxWindow) }

func (s *Server) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.links == 0 && time.Since(s.since) >= s.Idle
}

// shutdown removes the socket under the lock (a client starting a server
// holds it) and stops listening, unless a link came meanwhile.
func (s *Server) shutdown(ln net.Listener, p Paths) bool {
	lf, _, err := safefile.OpenAppend(p.Lock)
	if err == nil {
		defer lf.Close()
		if auditlink.FlockWithin(lf, time.Second) == nil {
			defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)
		}
	}
	if !s.idle() {
		return false
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	os.Remove(p.Sock)
	ln.Close()
	return true
}

// serve reads one link's hello and facts.
func (s *Server) serve(c net.Conn) {
	lc := &linkClock{}
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.clocks, lc)
		s.links--
		if s.links == 0 {
			s.since = time.Now()
		}
		s.mu.Unlock()
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetReadDeadline(time.Now().Add(StartWait))
	first, err := br.ReadBytes('\n')
	if err != nil {
		return
	}
	var h hello
	if json.Unmarshal(first, &h) != nil || h.V != Version || h.Key != s.Key {
		fmt.Fprintf(s.Log, "ahp-tap: conduct server: a link of another registration or version refused\n")
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	lc.clocked = h.Clocked
	s.mu.Lock()
	s.clocks[lc] = true
	s.mu.Unlock()
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long fact: read it whole (bounded by MaxFact).
			rest, err2 := readLong(br, b)
			b, err = rest, err2
		}
		if err != nil {
			return
		}
		var l line
		if json.Unmarshal(b, &l) != nil {
			continue
		}
		s.mu.Lock()
		if l.Lost > 0 {
			s.flush(time.Time{})
			s.Timeline.Lost()
		}
		if l.Through != nil && l.Through.After(lc.through) {
			lc.through = *l.Through
		}
		if l.Fact != nil {
			if l.Fact.Time.After(lc.through) {
				lc.through = l.Fact.Time
			}
			if l.Fact.Time.Before(s.released) {
				if s.late == 0 {
					fmt.Fprintf(s.Log, "ahp-tap: conduct server: a fact of %s came %v after its frame, after later facts had been judged\n", l.Fact.Hook, time.Since(l.Fact.Time).Round(time.Millisecond))
				}
				s.late++
			}
			s.buf = append(s.buf, *l.Fact)
			s.bufBytes += factSize(l.Fact)
			if s.bufBytes > MaxBuffered {
				s.flush(time.Time{}) // memory first: order what is there now
			}
		}
		s.mu.Unlock()
	}
}

func readLong(br *bufio.Reader, head []byte) ([]byte, error) {
	out := append([]byte(nil), head...)
	for len(out) <= MaxFact {
		b, err := br.ReadSlice('\n')
		out = append(out, b...)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
	return nil, errors.New("a fact past the bound")
}

// sortFacts orders facts by time, keeping arrival order among equal times.
func sortFacts(fs []conduct.Fact) {
	slices.SortStableFunc(fs, func(a, b conduct.Fact) int { return a.Time.Compare(b.Time) })
}

// release hands the timeline, in time order, the facts older than the
// window.
func (s *Server) release(stop chan struct{}) {
	t := time.NewTicker(max(s.Window/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		s.flush(s.releasable(time.Now()))
		s.mu.Unlock()
	}
}

// releasable is the time before which the buffered facts can go to the
// timeline at now: those older than the window, and not past the clock of
// a link that tells it (its audit may still hold earlier frames), unless
// they have waited MaxWindow. s.mu is held.
func (s *Server) releasable(now time.Time) time.Time {
	before := now.Add(-s.Window)
	for lc := range s.clocks {
		if lc.clocked && lc.through.Before(before) {
			before = lc.through
		}
	}
	if floor := now.Add(-s.maxWindow()); before.Before(floor) {
		before = floor
	}
	return before
}

// flush hands the timeline the buffered facts up to before (zero: all),
// in time order (arrival order among equal times). s.mu is held.
func (s *Server) flush(before time.Time) {
	if len(s.buf) == 0 {
		return
	}
	sortFacts(s.buf)
	n := len(s.buf)
	if !before.IsZero() {
		n = 0
		for n < len(s.buf) && s.buf[n].Time.Before(before) {
			n++
		}
	}
	for _, ft := range s.buf[:n] {
		if ft.Time.After(s.released) {
			s.released = ft.Time
		}
		if err := s.Timeline.Take(ft); err != nil {
			fmt.Fprintf(s.Log, "ahp-tap: conduct server: %v\n", err)
		}
	}
	for i := range s.buf[:n] {
		s.bufBytes -= factSize(&s.buf[i])
	}
	s.buf = append(s.buf[:0], s.buf[n:]...)
	clear(s.buf[len(s.buf):cap(s.buf)]) // no stale fact keeps its frame alive
}

// factSize is about the memory a fact holds.
func factSize(f *conduct.Fact) int {
	return len(f.Raw) + len(f.Event) + len(f.Sub) + 256
}
