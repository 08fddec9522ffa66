// Package stdio wraps a stdio AHP backend: it starts the backend command,
// forwards the harness's bytes to it and its bytes back, unchanged, and hands
// a copy of each direction to a tap.Auditor off the forwarding path
// (AHP-STDIO-001). It mirrors the backend's fate: its exit status, or the
// signal that killed it.
package stdio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Defaults for Config.
const (
	// DefaultMaxAuditLine caps the audit copy of one line. Forwarding has
	// no cap; a longer line is audited as a truncated prefix (TAP-1).
	DefaultMaxAuditLine = 16 << 20
	// DefaultChunkQueue is how many read chunks may wait for the splitter.
	DefaultChunkQueue = 4096
	// DefaultChunkBytes caps the buffer bytes of the chunks waiting.
	DefaultChunkBytes = 8 << 20
	// smallChunk is the buffer size for reads of up to that many bytes.
	smallChunk = 4 << 10
	// DefaultAuditBytes caps the bytes of frames waiting in the audit queue.
	DefaultAuditBytes = tap.DefaultBudget
	// readSize is the forwarding loop's buffer: one pipe buffer.
	readSize = 64 << 10
	// auditNice is the scheduling priority (nice) of the audit threads.
	auditNice = 5
	// DefaultDrain bounds ahp-tap's exit once the backend has been reaped.
	DefaultDrain = 5 * time.Second
	// minDrain is what the audit and the sinks still get when the bound
	// has passed or a signal asked for an exit now.
	minDrain = 100 * time.Millisecond
)

// processStart is when this process began: a harness may write its first
// request from then on (NoteStart.Since).
var processStart = processStarted()

// Config describes one wrapped backend.
type Config struct {
	// Command and Args are the backend to run, directly (no shell).
	Command string
	Args    []string
	// Env is the backend's environment (nil: ahp-tap's own).
	Env []string
	// Dir is the backend's working directory ("" for ahp-tap's).
	Dir string

	// Stdin is what the harness writes (usually os.Stdin); Stdout is where
	// the backend's stdout goes (usually os.Stdout); Stderr receives the
	// backend's stderr unchanged (usually os.Stderr, handed to the child
	// as its own stderr so no byte is touched).
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	// Session checks the frames and transport notes, off the forwarding
	// path, with its own sink and recorder; nil means pure forwarding.
	// Queue is the depth of the audit queue in frames (0:
	// tap.DefaultQueue).
	Session *tap.Session
	// Mirror, when set, takes the audit copies and notes instead of a
	// Session: they go to an audit process (mirror.go).
	Mirror Mirror
	Queue  int
	// Conn names this link in frames and notes ("" for "stdio:<pid>").
	Conn string
	// MaxAuditLine caps the audit copy of one line (0: DefaultMaxAuditLine).
	MaxAuditLine int
	// ChunkQueue is the depth of the queue between the forwarding loops
	// and the splitter (0: DefaultChunkQueue); ChunkBytes caps the bytes
	// it holds (0: DefaultChunkBytes). A chunk that does not fit is
	// dropped and counted, never waited for.
	ChunkQueue int
	ChunkBytes int64
	// AuditBytes caps the bytes of frames queued for the auditor (0:
	// DefaultAuditBytes). Frames beyond it are dropped and counted.
	AuditBytes int64
	// Complete audits every frame: instead of dropping audit copies, the
	// forwarding loops wait for room in the chunk queue (back-pressure on
	// the harness and the backend). Bytes and order are unchanged.
	Complete bool
	// AuditPriority is how the audit threads yield the CPU to forwarding
	// (the zero value is PriorityLow).
	AuditPriority Priority
	// Hash computes a SHA-256 of each direction's forwarded bytes.
	Hash bool
	// Diag receives ahp-tap's own one-line diagnostics (nil: discarded).
	// It must not block: give an nbwriter.Writer in front of stderr.
	Diag io.Writer
	// Watchdog, when set, is the command line of a watchdog process
	// (see Watchdog) that kills the backend's process group if ahp-tap
	// dies without cleaning up; ahp-tap stdio runs itself as
	// `ahp-tap __watchdog`.
	Watchdog []string
	// Drain bounds the exit once the backend has been reaped (0:
	// DefaultDrain): forwarding what processes the backend started (a
	// setsid'd daemon holding its stdout) still write, writing the
	// backend's last bytes to a harness that does not read them, and
	// finishing the audit. What is left then is abandoned: the forwarding
	// is cut (one diagnostic line says why) and the frames not audited are
	// counted (TAP-1).
	Drain time.Duration
	// Inject, when set, injects the plan's faults (--inject, issue 25):
	// the tap answers selected requests in the backend's place (inject.go).
	// nil: the plain copy loops, forwarding byte for byte as they read.
	Inject *inject.Plan
}

// Priority says how the audit threads (splitting, rules, log, capture)
// share the CPU with forwarding, the harness and the backend.
type Priority string

// Audit priorities. Forwarding never waits for auditing whatever the
// priority; the priority decides how much CPU auditing takes when the CPUs
// are busy, and so how many audit copies are dropped under load versus how
// much the traffic's tail latency suffers.
const (
	// PriorityLow runs auditing at nice 5 (the default); an audit
	// process's session too while the audit keeps up (GroupGovernor).
	PriorityLow Priority = "low"
	// PriorityIdle runs auditing only on otherwise idle CPU (Linux
	// SCHED_IDLE): the lowest latency cost, the most frames not audited
	// on a busy machine. An audit process runs every thread so
	// (AuditProcess).
	PriorityIdle Priority = "idle"
	// PriorityNormal runs auditing like forwarding: the fewest frames not
	// audited, the highest latency cost on a busy machine.
	PriorityNormal Priority = "normal"
)

// ParsePriority parses "low", "idle" or "normal".
func ParsePriority(s string) (Priority, error) {
	switch p := Priority(s); p {
	case PriorityLow, PriorityIdle, PriorityNormal:
		return p, nil
	}
	return "", fmt.Errorf("audit priority %q is not low, idle or normal", s)
}

// DirStats describes one direction's forwarded traffic.
type DirStats struct {
	// Bytes and Frames forwarded. Frames counts lines, including a final
	// line without "\n".
	Bytes  int64
	Frames int64
	// SHA256 of the forwarded bytes, when Config.Hash is set.
	SHA256 []byte
}

// Result is how the backend ended and what crossed the link.
type Result struct {
	// ExitCode is the backend's exit status, -1 when it died of a signal.
	ExitCode int
	// Signal is the signal that killed the backend, 0 otherwise.
	Signal syscall.Signal
	// Harness and Backend describe the bytes each side sent.
	Harness, Backend DirStats
	// ChunksDropped counts read chunks whose audit copy was dropped
	// because the splitter fell behind.
	ChunksDropped uint64
	// NotAudited counts frames forwarded but not audited.
	NotAudited uint64
	// Deadline is when ahp-tap should have exited by: the backend's
	// reaping plus Config.Drain (sooner after a signal asked for an exit
	// now). Whoever closes sinks after Run closes them within what is left.
	Deadline time.Time
}

// Status is the exit code a wrapper mirroring r should use: the backend's
// own, or 128+N when it died of signal N.
func (r Result) Status() int {
	if r.Signal != 0 {
		return 128 + int(r.Signal)
	}
	return r.ExitCode
}

// StartError reports that the backend could not be started. Code is the
// conventional shell status for it: 127 not found, 126 not executable.
type StartError struct {
	Err  error
	Code int
}

func (e *StartError) Error() string { return fmt.Sprintf("cannot start backend: %v", e.Err) }
func (e *StartError) Unwrap() error { return e.Err }

// A Tap runs one backend. Create it with New, call Run once; Signal may be
// called from any goroutine.
type Tap struct {
	cfg Config
	aud *tap.Auditor // nil without a Session

	chunks chan chunk    // read chunks and notes, in wire order; closed by Run after both streams end
	fed    chan struct{} // closed when the feeder has handled every chunk
	chunkB atomic.Int64  // buffer bytes of the chunks in the chunks queue
	// inFlight counts the chunks and notes timed and not yet handled by
	// the feeder: each is counted before its time is taken, so while it
	// is 0 everything timed so far is in the auditor's queue (clock).
	inFlight atomic.Int64
	room     chan struct{} // Complete: the feeder made room in chunks

	mu      sync.Mutex // guards pgid, signals, lastSignal
	pgid    int        // the backend's process group, 0 before start
	signals int        // how many termination signals so far (a repeat within SignalRepeat counts once)
	// lastSignal is when the last counted termination signal came.
	lastSignal time.Time

	reaped   atomic.Bool   // the backend has been reaped: a signal now means "exit now"
	giveUp   chan struct{} // closed by stopWaiting: the shutdown waits no longer
	giveOnce sync.Once     // closes giveUp

	closeMu sync.RWMutex // held for reading while queueing; for writing to close chunks
	closing bool         // guarded by closeMu: chunks is closed, nothing may be queued

	dropped [3]atomic.Bool   // by Direction: a chunk was dropped since the last queued one
	nchunk  atomic.Uint64    // chunks dropped
	lines   [3]atomic.Uint64 // by Direction: lines in dropped chunks (frames not audited)
}

// New returns a tap for cfg.
func New(cfg Config) *Tap {
	if cfg.MaxAuditLine <= 0 {
		cfg.MaxAuditLine = DefaultMaxAuditLine
	}
	if cfg.ChunkQueue <= 0 {
		cfg.ChunkQueue = DefaultChunkQueue
	}
	if cfg.ChunkBytes <= 0 {
		cfg.ChunkBytes = DefaultChunkBytes
	}
	if cfg.AuditBytes <= 0 {
		cfg.AuditBytes = DefaultAuditBytes
	}
	if cfg.Conn == "" {
		cfg.Conn = fmt.Sprintf("stdio:%d", os.Getpid())
	}
	if cfg.Diag == nil {
		cfg.Diag = io.Discard
	}
	if cfg.Drain <= 0 {
		cfg.Drain = DefaultDrain
	}
	t := &Tap{cfg: cfg, chunks: make(chan chunk, cfg.ChunkQueue), fed: make(chan struct{}), room: make(chan struct{}, 1), giveUp: make(chan struct{})}
	t.aud = t.newAuditor() // feed.go
	return t
}

// A chunk is one read's audit copy, or a transport note, in wire order.
type chunk struct {
	dir  tap.Direction
	b    []byte    // a copy of the bytes read, in buf
	buf  *[]byte   // from getChunk; the feeder puts it back
	t    time.Time // when they were read
	lost bool      // chunks of dir were dropped just before this one
	note *tap.Note // set instead of b for EOF and exit facts
}

// Run starts the backend, forwards both directions until the backend has
// exited and its stdout is drained, then returns how it ended. Cancelling
// ctx kills the backend's process group. The error is a *StartError when
// the backend could not be started; forwarding errors are not errors of
// Run (the backend's fate decides the result).
func (t *Tap) Run(ctx context.Context) (Result, error) {
	var res Result
	inR, inW, err := os.Pipe() // backend's stdin
	if err != nil {
		return res, &StartError{Err: err, Code: 126}
	}
	outR, outW, err := os.Pipe() // backend's stdout
	if err != nil {
		inR.Close()
		inW.Close()
		return res, &StartError{Err: err, Code: 126}
	}
	cmd := exec.Command(t.cfg.Command, t.cfg.Args...)
	cmd.Env, cmd.Dir = t.cfg.Env, t.cfg.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, t.cfg.Stderr
	cmd.SysProcAttr = sysProcAttr()
	started := make(chan error, 1) // the result of cmd.Start
	waited := make(chan error, 1)  // the result of cmd.Wait
	go func() {
		// The kernel's parent-death signal follows the thread that forked
		// the backend, not the process: fork from a thread no one else
		// uses and that lives until the backend is reaped, so that no
		// other thread's exit (a pinned audit thread, say) kills it.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		failed := tap.Note{Kind: tap.NoteUpstreamFailure, Time: time.Now(), Conn: t.cfg.Conn,
			Detail: fmt.Sprintf("the backend could not be started: %v", err)}
		if !t.mirror(failed) && t.aud != nil {
			t.aud.Note(failed)
			t.aud.Close()
		}
		return res, &StartError{Err: err, Code: code}
	}
	inR.Close()
	outW.Close()
	t.mu.Lock()
	t.pgid = cmd.Process.Pid // Setpgid: the group id is the backend's pid
	pending := t.signals
	t.mu.Unlock()
	if pending > 0 {
		t.killGroup(syscall.SIGTERM)
	}
	if len(t.cfg.Watchdog) > 0 {
		disarm := startWatchdog(t.cfg.Watchdog, cmd.Process.Pid, t.cfg.Diag)
		// Run kills the group itself once the backend is reaped; the
		// watchdog is for the case where Run never gets there.
		defer disarm()
	}
	start := tap.Note{Kind: tap.NoteStart, Time: time.Now(), Conn: t.cfg.Conn, Detail: fmt.Sprintf("pid %d", cmd.Process.Pid), Since: processStart}
	if !t.mirror(start) && t.aud != nil {
		// Notes go through the auditor in order; nothing else is queued yet.
		t.aud.Note(start)
	}
	go t.feed()

	stop := context.AfterFunc(ctx, func() { t.killGroup(syscall.SIGKILL) })
	defer stop()

	up := &requestCopier{t: t, dir: tap.FromHarness, src: t.cfg.Stdin, dst: inW}
	down := &responseCopier{copier{t: t, dir: tap.FromBackend, src: outR, dst: t.cfg.Stdout}}
	upDone := make(chan struct{}) // closed when the harness→backend loop has ended
	downDone := make(chan struct{})
	var inj *injector // --inject only
	if t.cfg.Inject != nil {
		inj = newInjector(t)
	}
	go func() {
		defer close(upDone)
		if inj != nil {
			inj.runUp(up)
		} else {
			up.run()
		}
		// AHP-STDIO-001 per_event: the harness's EOF is the backend's EOF.
		inW.Close()
		if up.writeErr != nil {
			// The backend closed its stdin: let the harness see a broken
			// pipe too, as it would without ahp-tap.
			if c, ok := t.cfg.Stdin.(io.Closer); ok {
				c.Close()
			}
		}
	}()
	go func() {
		defer close(downDone)
		if inj != nil {
			inj.runDown(&down.copier)
		} else {
			down.run()
		}
		if down.writeErr != nil {
			// The harness stopped reading: the backend gets SIGPIPE on
			// its next write, as it would without ahp-tap.
			outR.Close()
		}
	}()

	werr := <-waited
	// From here the exit is bounded (issue 8 item 3): nothing the backend
	// left behind, no harness that stops reading, no stuck sink keeps
	// ahp-tap alive longer than Drain.
	t.reaped.Store(true)
	res.Deadline = time.Now().Add(t.cfg.Drain)
	bound := time.AfterFunc(t.cfg.Drain, t.stopWaiting)
	defer bound.Stop()
	// Whatever else the backend left running in its group dies with it,
	// so that no process is left behind and its stdout reaches EOF.
	t.killGroup(syscall.SIGKILL)
	// Nothing reads the backend's stdin any more: a harness write still in
	// flight fails, and the harness sees the broken pipe it would have.
	inW.Close()
	select {
	case <-downDone:
	case <-t.giveUp:
		// A process that left the group (setsid) holds the backend's
		// stdout open, or the harness does not read ours: stop forwarding.
		// The read is interrupted; a write the harness never takes is
		// left to the process's exit.
		why := "a process it started (outside its process group) still holds its stdout open"
		if down.state.Load() == stateWriting {
			why = "the harness is not reading the backend's last output"
		}
		printable.Fprintf(t.cfg.Diag, "ahp-tap: the backend exited but %s; stopped forwarding %s after the backend's exit\n", why, t.cfg.Drain)
	}
	outR.Close()
	t.inFlight.Add(1) // before the exit's time: the feeder counts it handled
	now := time.Now()
	res.ExitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal()
		res.ExitCode = -1
	} else if werr != nil && res.ExitCode == -1 {
		printable.Fprintf(t.cfg.Diag, "ahp-tap: waiting for backend: %v\n", werr)
	}
	exit := tap.Note{Kind: tap.NoteExit, Time: now, Conn: t.cfg.Conn, ExitCode: res.ExitCode}
	if res.Signal != 0 {
		exit.Signal = signalName(res.Signal)
	}
	// The harness side may still be blocked reading our stdin; its EOF
	// note, if it came, is already queued in order.
	t.mirror(exit)
	select {
	case t.chunks <- chunk{note: &exit}:
	case <-t.giveUp:
		t.inFlight.Add(-1)
	}
	t.closeChunks()
	select {
	case <-t.fed:
	case <-t.giveUp:
	}
	select {
	case <-t.giveUp:
		res.Deadline = time.Now() // a signal asked for an exit now, or the bound passed
	default:
	}
	if t.aud != nil {
		// Drains, runs end-of-stream rules, reports drops; abandons what
		// is left when the bound passes (a capture write that blocks).
		t.aud.CloseWithin(max(time.Until(res.Deadline), minDrain))
		res.NotAudited = t.aud.Dropped()
	}

	res.Harness, res.Backend = up.stats(), down.stats()
	res.ChunksDropped = t.nchunk.Load()
	return res, nil
}

// closeChunks closes the chunk queue. The harness copier may still be
// blocked in a read of the harness's stdin (the harness keeps it open after
// the backend exited); it never touches the queue again because it checks
// t.closing first.
func (t *Tap) closeChunks() {
	t.closeMu.Lock()
	t.closing = true
	t.closeMu.Unlock()
	close(t.chunks)
}

// Signal forwards a signal the wrapper received to the backend's process
// group. Signals that ask a process to stop (SIGINT, SIGTERM, SIGHUP) are
// passed on as they are the first time; a second one kills the group and
// ends the wait for the shutdown (issue 8 item 5: a second signal exits at
// once), as does any such signal after the backend was reaped. Others
// (SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH…) are always passed on as they are:
// a backend may handle them and go on.
func (t *Tap) Signal(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	switch s {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP:
	default:
		t.killGroup(s)
		return
	}
	t.mu.Lock()
	now := time.Now()
	if t.signals > 0 && now.Sub(t.lastSignal) < SignalRepeat {
		// The same request delivered twice (timeout(1) signals the tap
		// and then its process group): not a second one.
		t.mu.Unlock()
		return
	}
	t.signals++
	t.lastSignal = now
	n := t.signals
	t.mu.Unlock()
	if n > 1 || t.reaped.Load() {
		t.stopWaiting()
	}
	if n > 1 {
		s = syscall.SIGKILL
	}
	t.killGroup(s)
}

// stopWaiting ends every wait of the shutdown. It is idempotent.
func (t *Tap) stopWaiting() { t.giveOnce.Do(func() { close(t.giveUp) }) }

// killGroup sends sig to the backend's process group, if started.
func (t *Tap) killGroup(sig syscall.Signal) {
	t.mu.Lock()
	pgid := t.pgid
	t.mu.Unlock()
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
}

// copier is one direction's forwarding loop: a plain read/write loop. The
// audit copy of each chunk is queued before the chunk is written, so that
// the splitter sees a request before the response it causes, and queueing
// never blocks.
type copier struct {
	t        *Tap
	dir      tap.Direction
	src      io.Reader
	dst      io.Writer
	writeErr error        // set before run returns
	readErr  error        // set before run returns
	state    atomic.Int32 // stateReading or stateWriting: what the loop waits for, for the diagnostic when it is abandoned

	mu      sync.Mutex // guards bytes, lines, partial, sum: Run may read them while the harness copier still runs
	bytes   int64
	lines   int64
	partial bool // the last byte forwarded was not "\n"
	sum     hash.Hash
}

// copier states.
const (
	stateReading = iota
	stateWriting
)

// requestCopier forwards the harness's stdin to the backend's stdin.
type requestCopier = copier

// responseCopier forwards the backend's stdout to the harness.
type responseCopier struct{ copier }

func (c *copier) run() {
	c.mu.Lock()
	if c.t.cfg.Hash {
		c.sum = sha256.New()
	}
	c.mu.Unlock()
	buf := make([]byte, readSize)
	for {
		n, rerr := c.src.Read(buf)
		if n > 0 {
			p := buf[:n]
			c.t.audit(c.dir, p)
			c.state.Store(stateWriting)
			w, werr := c.dst.Write(p)
			c.state.Store(stateReading)
			if werr == nil && w != n {
				werr = io.ErrShortWrite
			}
			c.count(p[:w])
			if werr != nil {
				c.writeErr = werr
				break
			}
		}
		if rerr != nil {
			if rerr != io.EOF && !errors.Is(rerr, os.ErrClosed) {
				c.readErr = rerr
			}
			break
		}
	}
	c.t.eof(c.dir)
}

// count keeps the statistics of forwarded bytes p.
func (c *copier) count(p []byte) {
	if len(p) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	c.bytes += int64(len(p))
	c.partial = p[len(p)-1] != '\n'
	if c.sum != nil {
		c.sum.Write(p)
	}
}

func (c *copier) stats() DirStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := DirStats{Bytes: c.bytes, Frames: c.lines}
	if c.partial {
		s.Frames++
	}
	if c.sum != nil {
		s.SHA256 = c.sum.Sum(nil)
	}
	return s
}

// audit queues a copy of p for the splitter without blocking. When the
// queue is full the copy is dropped and counted, and the splitter is told
// to resynchronise at the next newline.
func (t *Tap) audit(dir tap.Direction, p []byte) {
	if t.cfg.Mirror != nil {
		t.cfg.Mirror.Chunk(dir, time.Now(), p)
		return
	}
	if t.aud == nil {
		return
	}
	t.inFlight.Add(1) // before c.t
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if t.closing {
		t.inFlight.Add(-1)
		return
	}
	buf := getChunk(len(p))
	size := int64(cap(*buf))
	c := chunk{dir: dir, b: append((*buf)[:0], p...), t: time.Now(), buf: buf}
	c.lost = t.dropped[dir].Load()
	if t.cfg.Complete {
		t.waitChunkRoom(c, size) // feed.go
		return
	}
	queued := false
	if t.chunkB.Add(size) <= t.cfg.ChunkBytes {
		select {
		case t.chunks <- c:
			queued = true
		default:
		}
	}
	if queued {
		if c.lost {
			t.dropped[dir].Store(false)
		}
		return
	}
	t.chunkB.Add(-size)
	t.inFlight.Add(-1)
	putChunk(buf)
	t.dropped[dir].Store(true)
	t.nchunk.Add(1)
	t.lines[dir].Add(uint64(bytes.Count(p, []byte{'\n'})))
}

// smallChunks and largeChunks recycle audit copies so that forwarding a
// long stream does not leave a trail of garbage the size of the stream; a
// small read (one message) takes a small buffer so that many can queue.
var (
	smallChunks = sync.Pool{New: func() any { b := make([]byte, 0, smallChunk); return &b }}
	largeChunks = sync.Pool{New: func() any { b := make([]byte, 0, readSize); return &b }}
)

func getChunk(n int) *[]byte {
	if n <= smallChunk {
		return smallChunks.Get().(*[]byte)
	}
	return largeChunks.Get().(*[]byte)
}

func putChunk(b *[]byte) {
	if cap(*b) <= smallChunk {
		smallChunks.Put(b)
	} else {
		largeChunks.Put(b)
	}
}

// eof queues the end of dir's stream. It may wait for room (forwarding in
// that direction is over), but not past the shutdown bound.
func (t *Tap) eof(dir tap.Direction) {
	if t.mirror(tap.Note{Kind: tap.NoteEOF, Time: time.Now(), Conn: t.cfg.Conn, Dir: dir}) || t.aud == nil {
		return
	}
	t.queueNote(func() chunk {
		return chunk{dir: dir, lost: t.dropped[dir].Swap(false), note: &tap.Note{Kind: tap.NoteEOF, Time: time.Now(), Conn: t.cfg.Conn, Dir: dir}}
	})
}

// queueNote hands the feeder the chunk mk makes, a note timed inside mk,
// in order with the frames; it is counted in inFlight from before its
// time is taken until the feeder has it (Tap.clock). It may wait for
// room, but not past the shutdown bound.
func (t *Tap) queueNote(mk func() chunk) {
	t.inFlight.Add(1)
	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	if t.closing {
		t.inFlight.Add(-1)
		return
	}
	select {
	case t.chunks <- mk():
	case <-t.giveUp: // the shutdown bound passed: the feeder is stuck
		t.inFlight.Add(-1)
	}
}
