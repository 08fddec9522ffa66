package auditlink

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/safefile"
)

// The rendezvous of the shared audit process is in the --state directory:
//
//	audit-KEY.sock  the server's socket (0600)
//	audit-KEY.lock  flock(2): one process at a time starts a server or removes a stale socket
//	audit-KEY.err   the server's stderr (its own failures; findings never go there)
//
// KEY hashes everything that makes one audit differ from another, so taps
// configured differently never share a server (the caller computes it).

// MaxErrFile bounds a shared audit server's error file: a start past it
// begins the file afresh.
const MaxErrFile = 1 << 20

// Paths are the rendezvous files of one key in a directory.
type Paths struct{ Sock, Lock, Err string }

// PathsFor returns the rendezvous files of key in dir.
func PathsFor(dir, key string) Paths {
	p := filepath.Join(dir, "audit-"+key)
	return Paths{Sock: p + ".sock", Lock: p + ".lock", Err: p + ".err"}
}

// RefusedError marks a rendezvous that is not used for a reason the user
// should see (a planted link, a file of another user, a refusal by the
// server), as opposed to no server answering.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

// errNoServer is a rendezvous socket nobody listens on, or none at all.
var errNoServer = errors.New("no shared audit process answers")

// A Rendezvous is where the taps of one --state directory with one audit
// configuration meet their shared audit process.
type Rendezvous struct {
	Dir, Key string
	// Argv is the command line that starts the shared audit process for
	// p; it gets a ready pipe as fd 3 (it writes one byte once it
	// listens), the error file as stderr, and a session of its own.
	Argv func(p Paths) []string
	// Diag takes the tap's own notices (a lock file's mode changed…) and
	// the server's notices for this link.
	Diag io.Writer
}

// Connect connects a link named conn to the shared audit process,
// starting one when none answers. It gives up within ReadyWait in all
// (connecting, starting a server, its answer, and once more when a server
// was exiting as we came), so that a server that is stopped (SIGSTOP) or
// hung costs the tap at most that before it falls back to an audit
// process of its own. backlog bounds the records waiting in this process
// for room in the socket (bytes).
func (r Rendezvous) Connect(conn string, backlog int) (*Link, error) {
	return r.connect(conn, backlog, time.Now().Add(ReadyWait))
}

func (r Rendezvous) connect(conn string, backlog int, deadline time.Time) (*Link, error) {
	if err := CheckDir(r.Dir); err != nil {
		return nil, err
	}
	p := PathsFor(r.Dir, r.Key)
	hello := Hello{V: Version, Key: r.Key, Conn: conn}
	var last error
	for range 2 { // a server that was exiting as we came: once more, within the same bound
		fd, err := dial(p.Sock)
		if err != nil {
			var ref *RefusedError
			if errors.As(err, &ref) {
				return nil, err
			}
			if fd, err = r.start(p, deadline); err != nil {
				return nil, err
			}
		}
		link, err := handshake(fd, hello, backlog, deadline, r.Diag)
		if err == nil {
			return link, nil
		}
		last = err
		var ref *RefusedError
		if errors.As(err, &ref) || time.Now().After(deadline) {
			break
		}
	}
	return nil, last
}

// CheckDir accepts a --state directory for the rendezvous: a directory of
// this user's that no one else may write to. It makes it if need be.
func CheckDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return &RefusedError{dir + " is not a directory"}
	case int(st.Uid) != os.Getuid():
		return &RefusedError{dir + " belongs to another user"}
	case st.Mode&0o022 != 0:
		return &RefusedError{fmt.Sprintf("%s may be written by other users (mode %#o)", dir, st.Mode&0o777)}
	}
	return nil
}

// dial connects to the socket at path without following a link, and only
// to a server of this user's.
func dial(path string) (int, error) {
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
		return -1, &RefusedError{path + " is served by another user's process"}
	}
	return fd, nil
}

// checkSocketFile refuses anything at the socket's path but a socket of
// this user's: a symbolic link is never followed.
func checkSocketFile(path string, st *unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &RefusedError{path + " is a symbolic link; ahp-tap does not follow links in --state"}
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK:
		return &RefusedError{path + " is not a socket"}
	case int(st.Uid) != os.Getuid():
		return &RefusedError{path + " belongs to another user"}
	}
	return nil
}

// start takes the lock, and unless another tap started a server
// meanwhile, removes a stale socket and starts the shared audit process.
// It returns a connection to the server.
func (r Rendezvous) start(p Paths, deadline time.Time) (int, error) {
	lf, notice, err := safefile.OpenAppend(p.Lock)
	if err != nil {
		return -1, &RefusedError{"lock: " + err.Error()}
	}
	defer lf.Close()
	if notice != "" && r.Diag != nil {
		printable.Fprintf(r.Diag, "ahp-tap: %s\n", notice)
	}
	if err := FlockWithin(lf, time.Until(deadline)); err != nil {
		return -1, err
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	if fd, err := dial(p.Sock); err == nil || !errors.Is(err, errNoServer) {
		return fd, err // another tap started it, or a refusal
	}
	var st unix.Stat_t
	if unix.Lstat(p.Sock, &st) == nil {
		if err := checkSocketFile(p.Sock, &st); err != nil {
			return -1, err
		}
		// A socket nobody listens on (its server was killed): under the
		// lock, nobody is binding it now.
		if err := unix.Unlink(p.Sock); err != nil {
			return -1, err
		}
	}
	ef, notice, err := safefile.OpenAppend(p.Err)
	if err != nil {
		return -1, &RefusedError{"error file: " + err.Error()}
	}
	defer ef.Close()
	if notice != "" && r.Diag != nil {
		printable.Fprintf(r.Diag, "ahp-tap: %s\n", notice)
	}
	// One line per server start, for as long as DIR is used: keep the file
	// bounded by starting it afresh past MaxErrFile (we hold the lock).
	if fi, err := ef.Stat(); err == nil && fi.Size() > MaxErrFile {
		_ = ef.Truncate(0)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	defer readyR.Close()
	argv := r.Argv(p)
	cmd := exec.Command(argv[0], argv[1:]...)
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
	_ = readyR.SetReadDeadline(deadline)
	if _, err := readyR.Read(make([]byte, 1)); err != nil {
		return -1, fmt.Errorf("the shared audit process did not start (see %s)", p.Err)
	}
	return dial(p.Sock)
}

// FlockWithin takes f's exclusive lock, waiting at most d.
func FlockWithin(f *os.File, d time.Duration) error {
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
			return fmt.Errorf("%s stayed locked for %v", f.Name(), d.Round(time.Millisecond))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// handshake says hello on fd and waits (until deadline) until the server
// reads the link; the link then carries the audit copies as the pipe to
// an audit process of its own would.
func handshake(fd int, hello Hello, backlog int, deadline time.Time, diag io.Writer) (*Link, error) {
	rfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	rf := os.NewFile(uintptr(rfd), "shared-audit") // non-blocking: deadlines work
	fail := func(err error) (*Link, error) {
		unix.Close(fd)
		rf.Close()
		return nil, err
	}
	if err := WriteHello(fdWriter(fd), hello); err != nil {
		return fail(fmt.Errorf("saying hello to the shared audit process: %v", err))
	}
	_ = rf.SetReadDeadline(deadline)
	br := bufio.NewReader(rf)
	kind, payload, err := ReadMsg(br)
	switch {
	case err != nil:
		return fail(fmt.Errorf("the shared audit process did not answer: %v", err))
	case kind == MsgRefused:
		return fail(&RefusedError{"the shared audit process refused the link: " + string(payload)})
	case kind != MsgReady:
		return fail(fmt.Errorf("the shared audit process answered %q", kind))
	}
	_ = rf.SetReadDeadline(time.Time{})
	pm, err := NewSocketMirror(fd, backlog)
	if err != nil {
		return fail(err)
	}
	l := &Link{mirror: pm, done: make(chan struct{}), conn: rf, shared: true}
	if diag == nil {
		diag = io.Discard
	}
	go func() {
		// The server's notices for this tap (a log it cannot open…),
		// then its word that the link is written.
		defer close(l.done)
		for {
			kind, payload, err := ReadMsg(br)
			if err != nil {
				return
			}
			switch kind {
			case MsgDone:
				l.confirmed.Store(true)
				return
			case MsgDiag:
				diag.Write(payload)
			}
		}
	}()
	return l, nil
}

// fdWriter writes to a non-blocking socket fd whole (the hello is small:
// the socket's buffer takes it at once, or the write fails).
type fdWriter int

func (w fdWriter) Write(p []byte) (int, error) {
	n, err := unix.Write(int(w), p)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	return n, err
}
