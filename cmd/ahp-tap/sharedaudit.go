package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ahp-tap/ahp-tap/internal/safefile"
	"github.com/ahp-tap/ahp-tap/stdio"
)

// The shared audit process (docs/stdio.md, "Process model"). A per_event
// backend is one ahp-tap per event; with --state DIR every one of them
// sends its audit link to one audit process, which serves each link as the
// audit process of that event would (one tap.Session per link, the same
// records over a unix socket instead of a pipe), so that the rules'
// start-up is paid once rather than per event. The rendezvous is in DIR:
//
//	audit-KEY.sock  the server's socket (0600)
//	audit-KEY.lock  flock(2): one process at a time starts a server or removes a stale socket
//	audit-KEY.err   the server's stderr (its own failures; findings never go there)
//
// KEY hashes everything that makes one audit differ from another (the
// flags, the registration's content, the binary, the working directory),
// so taps configured differently never share a server.

// auditServerCommand is the hidden subcommand that runs the shared audit
// process.
const auditServerCommand = "__audit-server"

// sharedIdle is how long the shared audit process stays up with no link.
const sharedIdle = 2 * time.Second

// maxSharedLinks bounds the links one shared audit process serves at once
// (each holds a few MiB at most); a tap past it gets an audit process of
// its own.
const maxSharedLinks = 64

// Messages of the shared audit process to a forwarding process, each a
// kind byte, a little-endian uint32 length and the payload.
const (
	sharedReady   = 'R' // the link is being read
	sharedDiag    = 'D' // a notice for the tap's stderr
	sharedDone    = 'A' // the link's findings, capture and state are written
	sharedRefused = 'X' // not served here (payload: why)
)

// sharedHello is the first line a forwarding process sends on its
// connection.
type sharedHello struct {
	V    int    `json:"v"`
	Key  string `json:"key"`
	Conn string `json:"conn"`
}

// errSharedRefused marks a rendezvous that is not used for a reason the
// user should see (a planted link, a file of another user), as opposed to
// no server answering.
type errSharedRefused struct{ msg string }

// maxAuditErrFile bounds a shared audit server's error file (DIR/audit-KEY.err).
const maxAuditErrFile = 1 << 20

func (e *errSharedRefused) Error() string { return e.msg }

// sharedAuditWanted reports whether this tap's audit goes to the shared
// audit process: --shared-audit, a per_event lifecycle, --state, and an
// audit that writes nothing to the tap's own stderr (the summary, the
// console and --log - belong to this event's stderr, which only an audit
// process of its own holds).
func sharedAuditWanted(sf *stdioFlags, l *loaded) bool {
	cfg := l.cfg
	cfg.Lifecycle = sf.lifecycle
	return sf.sharedAudit && sf.state != "" && cfg.Resolved().Lifecycle == "per_event" &&
		!sf.summary && !sf.console && sf.log != "-" && runtime.GOOS == "linux"
}

// sharedAuditKey is KEY: a short hash of everything the audit process's
// work depends on.
func sharedAuditKey(sf *stdioFlags, flagArgs []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "ahp-tap %s\x00", version)
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	st, err := os.Stat(exe)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00", exe, st.Size(), st.ModTime().UnixNano())
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%s\x00%d\x00", cwd, len(flagArgs))
	for _, a := range flagArgs {
		fmt.Fprintf(h, "%s\x00", a)
	}
	if sf.registration != "" {
		data, err := os.ReadFile(sf.registration)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		h.Write(sum[:])
	}
	env := os.Environ()
	slices.Sort(env)
	for _, e := range env {
		if strings.HasPrefix(e, "OTEL_") { // the OTLP exporter's settings
			fmt.Fprintf(h, "%s\x00", e)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// sharedPaths are the rendezvous files of KEY in dir.
type sharedPaths struct{ sock, lock, err string }

func sharedPathsFor(dir, key string) sharedPaths {
	p := filepath.Join(dir, "audit-"+key)
	return sharedPaths{sock: p + ".sock", lock: p + ".lock", err: p + ".err"}
}

// connectSharedAudit connects this tap's audit link to the shared audit
// process of its --state directory, starting one when none answers.
func (m *Main) connectSharedAudit(sf *stdioFlags, flagArgs []string, conn string, backlog int) (*auditLink, error) {
	if err := checkSharedDir(sf.state); err != nil {
		return nil, err
	}
	key, err := sharedAuditKey(sf, flagArgs)
	if err != nil {
		return nil, err
	}
	p := sharedPathsFor(sf.state, key)
	hello := sharedHello{V: 1, Key: key, Conn: conn}
	var last error
	for range 2 { // a server that was exiting as we came: once more
		fd, err := dialShared(p.sock)
		if err != nil {
			var ref *errSharedRefused
			if errors.As(err, &ref) {
				return nil, err
			}
			if fd, err = m.startSharedAudit(p, key, flagArgs); err != nil {
				return nil, err
			}
		}
		link, err := m.sharedHandshake(fd, hello, backlog)
		if err == nil {
			return link, nil
		}
		last = err
	}
	return nil, last
}

// checkSharedDir accepts a --state directory for the rendezvous: a
// directory of this user's that no one else may write to.
func checkSharedDir(dir string) error {
	// The audit process makes it too (OpenDirStore); the parent exists
	// (checkStdioValues).
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return &errSharedRefused{dir + " is not a directory"}
	case int(st.Uid) != os.Getuid():
		return &errSharedRefused{dir + " belongs to another user"}
	case st.Mode&0o022 != 0:
		return &errSharedRefused{fmt.Sprintf("%s may be written by other users (mode %#o)", dir, st.Mode&0o777)}
	}
	return nil
}

// errNoServer is a rendezvous socket nobody listens on, or none at all.
var errNoServer = errors.New("no shared audit process answers")

// dialShared connects to the socket at path without following a link,
// and only to a server of this user's.
func dialShared(path string) (int, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return -1, errNoServer
	}
	if err := checkSocketFile(path, &st); err != nil {
		return -1, err
	}
	fd, err := unixSocket()
	if err != nil {
		return -1, err
	}
	// Non-blocking: a full accept queue is EAGAIN, not a wait.
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.ENOENT) {
			return -1, errNoServer // stale, or gone since the Lstat
		}
		// A server that is busy (EAGAIN: its accept queue is full) is
		// no stale socket: never removed.
		return -1, fmt.Errorf("connecting to %s: %w", path, err)
	}
	if uid, err := peerUID(fd); err != nil || uid != os.Getuid() {
		unix.Close(fd)
		return -1, &errSharedRefused{path + " is served by another user's process"}
	}
	return fd, nil
}

// checkSocketFile refuses anything at the socket's path but a socket of
// this user's: a symbolic link is never followed.
func checkSocketFile(path string, st *unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &errSharedRefused{path + " is a symbolic link; ahp-tap does not follow links in --state"}
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK:
		return &errSharedRefused{path + " is not a socket"}
	case int(st.Uid) != os.Getuid():
		return &errSharedRefused{path + " belongs to another user"}
	}
	return nil
}

// startSharedAudit takes the lock, and unless another tap started a server
// meanwhile, removes a stale socket and starts the shared audit process.
// It returns a connection to the server.
func (m *Main) startSharedAudit(p sharedPaths, key string, flagArgs []string) (int, error) {
	lf, notice, err := safefile.OpenAppend(p.lock)
	if err != nil {
		return -1, &errSharedRefused{"lock: " + err.Error()}
	}
	defer lf.Close()
	if notice != "" {
		fmt.Fprintf(m.diag(), "ahp-tap: %s\n", notice)
	}
	if err := flockWithin(lf, auditReadyWait); err != nil {
		return -1, err
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	if fd, err := dialShared(p.sock); err == nil || !errors.Is(err, errNoServer) {
		return fd, err // another tap started it, or a refusal
	}
	var st unix.Stat_t
	if unix.Lstat(p.sock, &st) == nil {
		if err := checkSocketFile(p.sock, &st); err != nil {
			return -1, err
		}
		// A socket nobody listens on (its server was killed): under the
		// lock, nobody is binding it now.
		if err := unix.Unlink(p.sock); err != nil {
			return -1, err
		}
	}
	ef, notice, err := safefile.OpenAppend(p.err)
	if err != nil {
		return -1, &errSharedRefused{"error file: " + err.Error()}
	}
	defer ef.Close()
	if notice != "" {
		fmt.Fprintf(m.diag(), "ahp-tap: %s\n", notice)
	}
	// One line per server start, for as long as DIR is used: keep the file
	// bounded by starting it afresh past maxAuditErrFile (we hold the lock).
	if fi, err := ef.Stat(); err == nil && fi.Size() > maxAuditErrFile {
		_ = ef.Truncate(0)
	}
	exe, err := os.Executable()
	if err != nil {
		return -1, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	defer readyR.Close()
	args := append([]string{auditServerCommand, "--audit-key", key, "--socket", p.sock, "--lock", p.lock, "--ready-fd", "3"}, flagArgs...)
	cmd := exec.Command(exe, args...)
	cmd.Stderr = ef // no findings: its own failures only
	cmd.ExtraFiles = []*os.File{readyW}
	// Detached: a session of its own, no terminal, none of this tap's
	// standard files (a harness waits for those to close).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return -1, err
	}
	_ = cmd.Process.Release()
	_ = readyR.SetReadDeadline(time.Now().Add(auditReadyWait))
	if _, err := readyR.Read(make([]byte, 1)); err != nil {
		return -1, fmt.Errorf("the shared audit process did not start (see %s)", p.err)
	}
	return dialShared(p.sock)
}

// flockWithin takes f's exclusive lock, waiting at most d.
func flockWithin(f *os.File, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s stayed locked for %v", f.Name(), d)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sharedHandshake says hello on fd and waits (bounded) until the server
// reads the link; the link then carries the audit copies as the pipe to
// an audit process of its own would.
func (m *Main) sharedHandshake(fd int, hello sharedHello, backlog int) (*auditLink, error) {
	rfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	rf := os.NewFile(uintptr(rfd), "shared-audit") // non-blocking: deadlines work
	fail := func(err error) (*auditLink, error) {
		unix.Close(fd)
		rf.Close()
		return nil, err
	}
	b, _ := json.Marshal(hello)
	if n, err := unix.Write(fd, append(b, '\n')); err != nil || n != len(b)+1 {
		return fail(fmt.Errorf("saying hello to the shared audit process: %v", err))
	}
	_ = rf.SetReadDeadline(time.Now().Add(auditReadyWait))
	br := bufio.NewReader(rf)
	kind, payload, err := readSharedMsg(br)
	switch {
	case err != nil:
		return fail(fmt.Errorf("the shared audit process did not answer: %v", err))
	case kind == sharedRefused:
		return fail(&errSharedRefused{"the shared audit process refused the link: " + string(payload)})
	case kind != sharedReady:
		return fail(fmt.Errorf("the shared audit process answered %q", kind))
	}
	_ = rf.SetReadDeadline(time.Time{})
	pm, err := stdio.NewSocketMirror(fd, backlog)
	if err != nil {
		return fail(err)
	}
	l := &auditLink{mirror: pm, done: make(chan struct{}), conn: rf}
	diag := m.diag()
	go func() {
		// The server's notices for this tap (a log it cannot open…),
		// then its word that the link is written.
		defer close(l.done)
		for {
			kind, payload, err := readSharedMsg(br)
			if err != nil || kind == sharedDone {
				return
			}
			if kind == sharedDiag {
				diag.Write(payload)
			}
		}
	}()
	return l, nil
}

// readSharedMsg reads one message of the shared audit process.
func readSharedMsg(r io.Reader) (kind byte, payload []byte, err error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[1:])
	if n > 1<<16 {
		return 0, nil, fmt.Errorf("message of %d bytes", n)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return h[0], payload, nil
}

// sharedConn is the server's end of one link: its messages to the
// forwarding process, and a writer of notices for that process's stderr.
type sharedConn struct {
	c  *net.UnixConn
	mu sync.Mutex
}

func (sc *sharedConn) send(kind byte, payload []byte) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	b := make([]byte, 5+len(payload))
	b[0] = kind
	binary.LittleEndian.PutUint32(b[1:], uint32(len(payload)))
	copy(b[5:], payload)
	// A forwarding process that stopped reading (killed) never holds
	// the server up.
	_ = sc.c.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := sc.c.Write(b)
	return err
}

// Write implements io.Writer: a notice for the tap's stderr.
func (sc *sharedConn) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		n := min(len(p), 1<<16)
		if err := sc.send(sharedDiag, p[:n]); err != nil {
			return 0, err
		}
		p = p[n:]
	}
	return total, nil
}

// auditServer is the shared audit process.
type auditServer struct {
	key    string
	sf     stdioFlags
	prio   stdio.Priority
	ready  chan struct{} // closed when l (or loadErr) is set
	l      *loaded
	errOut io.Writer // the .err file

	mu    sync.Mutex
	links int       // links accepted and not yet finished
	since time.Time // when links last became 0
}

// runAuditServer is the shared audit process: `ahp-tap __audit-server
// --audit-key KEY --socket PATH --lock PATH --ready-fd FD STDIO-FLAGS...`.
func (m *Main) runAuditServer(_ context.Context, args []string) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT)
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	s := &auditServer{ready: make(chan struct{}), errOut: m.Stderr}
	s.sf.register(fs, io.Discard)
	key := fs.String("audit-key", "", "KEY")
	sock := fs.String("socket", "", "the socket's path")
	lock := fs.String("lock", "", "the lock's path")
	readyFD := fs.Int("ready-fd", -1, "a file descriptor to write to once the socket listens")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	s.key = *key
	s.prio, _ = stdio.ParsePriority(s.sf.priority)
	old := unix.Umask(0o177) // the socket is 0600 from the start
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: *sock, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(false) // only our own socket is removed, under the lock
	_ = os.Chmod(*sock, 0o600)
	var ours unix.Stat_t
	_ = unix.Lstat(*sock, &ours)
	fmt.Fprintf(m.Stderr, "ahp-tap: %s shared audit process %d started for %s\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), *sock)
	if *readyFD >= 0 {
		if f := os.NewFile(uintptr(*readyFD), "audit-ready"); f != nil {
			f.Write([]byte{1})
			f.Close()
		}
	}
	s.since = time.Now()
	go func() {
		defer close(s.ready)
		l, err := s.sf.load()
		if err != nil {
			fmt.Fprintf(m.Stderr, "ahp-tap: shared audit process: %v\n", err)
			return
		}
		s.l = l
	}()
	debug.SetMemoryLimit(64 << 20)
	debug.SetGCPercent(50)
	for {
		_ = ln.SetDeadline(time.Now().Add(sharedIdle / 4))
		c, err := ln.AcceptUnix()
		if err == nil {
			s.accept(c)
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			fmt.Fprintf(m.Stderr, "ahp-tap: shared audit process: %v\n", err)
			break
		}
		if s.idle() {
			break
		}
	}
	s.shutdown(ln, *sock, *lock, &ours)
	return nil
}

// idle reports whether the server has had no link for sharedIdle.
func (s *auditServer) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.links == 0 && time.Since(s.since) >= sharedIdle
}

// shutdown removes the socket (if it is still ours) under the lock, so
// that no tap connects any more; serves the links that connected before;
// and returns once every link is finished.
func (s *auditServer) shutdown(ln *net.UnixListener, sock, lock string, ours *unix.Stat_t) {
	lf, _, err := safefile.OpenAppend(lock)
	if err == nil {
		_ = flockWithin(lf, auditExitWait)
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

// accept serves c on a goroutine of its own, or refuses it past
// maxSharedLinks.
func (s *auditServer) accept(c *net.UnixConn) {
	s.mu.Lock()
	full := s.links >= maxSharedLinks
	if !full {
		s.links++
	}
	s.mu.Unlock()
	sc := &sharedConn{c: c}
	if full {
		sc.send(sharedRefused, []byte(fmt.Sprintf("it serves %d links already", maxSharedLinks)))
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

// serve runs one link as the audit process of that tap would: drain the
// link, feed one tap.Session, write the log, capture and state, then say
// so.
func (s *auditServer) serve(sc *sharedConn) {
	c := sc.c
	defer c.Close()
	uid, err := -1, error(nil)
	if rc, e := c.SyscallConn(); e == nil {
		_ = rc.Control(func(fd uintptr) { uid, err = peerUID(int(fd)) })
	}
	if err != nil || uid != os.Getuid() {
		return // another user's process (the socket is 0600 in a directory of ours): not ours to serve
	}
	_ = c.SetReadDeadline(time.Now().Add(auditReadyWait))
	br := bufio.NewReader(c)
	line, err := br.ReadBytes('\n')
	var hello sharedHello
	if err != nil || json.Unmarshal(line, &hello) != nil || hello.V != 1 || hello.Key != s.key || hello.Conn == "" {
		sc.send(sharedRefused, []byte("bad hello"))
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	drained := drainLink(stdio.NewRecordReader(br), s.sf.queue)
	if sc.send(sharedReady, nil) != nil {
		return
	}
	// A link that ends before its first record is a tap that gave up
	// waiting for our answer and audits the event itself: no session.
	first, ferr := drained()
	if ferr != nil {
		return
	}
	next := func() (stdio.Record, error) {
		if first.Kind != 0 {
			r := first
			first = stdio.Record{}
			return r, nil
		}
		return drained()
	}
	<-s.ready
	drainAll := func() {
		for _, err := next(); err == nil; _, err = next() {
		}
	}
	if s.l == nil {
		drainAll() // the forwarding process never waits on us
		fmt.Fprintln(sc, "ahp-tap: the shared audit process cannot load the rules; see the .err file in --state")
		sc.send(sharedDone, nil)
		return
	}
	sf := s.sf
	sf.conn, sf.audit = hello.Conn, auditOff // no forwarding here: only the session is used
	lm := &Main{Stderr: sc}                  // this tap's notices go back to its stderr
	run, err := lm.prepareStdio(&sf, s.l, []string{"true"}, s.prio)
	if err != nil {
		drainAll()
		fmt.Fprintf(sc, "ahp-tap: %v\n", err)
		sc.send(sharedDone, nil)
		return
	}
	stdio.AuditThread(s.prio) // this goroutine's thread, which ends with it
	feedAuditLink(next, run.session, hello.Conn)
	// The link is over: finish within the bound, whatever is left.
	done := make(chan struct{})
	go func() {
		run.session.Close()
		run.closeWithin(auditSinkClose)
		close(done)
	}()
	select {
	case <-done:
		sc.send(sharedDone, nil)
	case <-time.After(auditBound):
		fmt.Fprintf(s.errOut, "ahp-tap: link %s was not finished within %v of its end; its log or capture may be incomplete\n", hello.Conn, auditBound)
		fmt.Fprintf(sc, "ahp-tap: the shared audit process did not finish this link within %v of its end; the log or capture may be incomplete\n", auditBound)
	}
}
