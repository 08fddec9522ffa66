// Package report turns findings into things people and programs read: the
// violation log (JSON Lines), text and JSON reports, and the end-of-run
// summary. One file per output: log.go (the violation log), collector.go
// (counting findings), summary.go (the summary), text.go, json.go.
package report

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/safefile"
	"github.com/ahp-tap/ahp-tap/tap"
)

// LogBuffer is how many findings a Log holds while its writer catches up.
// Beyond that, findings are dropped and counted: the caller never waits.
const LogBuffer = 4096

// A Log is the violation log: JSON Lines written with zerolog, one finding
// per line (the record is documented in docs/log-format.md). Write never
// blocks the caller: findings go through a bounded buffer to a writer
// goroutine, and when the buffer is full they are dropped and counted. A
// log that cannot be written (a full disk, say) never disturbs the caller:
// the failure is reported once on the diagnostic writer and later findings
// are discarded. A Log is safe for concurrent use. A nil *Log discards
// everything, so callers need not test for "no --log".
type Log struct {
	zl     zerolog.Logger
	out    *failOnce
	closer io.Closer // the file, or nil for stderr

	in      chan tap.Finding // bounded buffer to the writer goroutine; closed by Close
	done    chan struct{}    // closed when the writer goroutine has drained in
	dropped atomic.Uint64    // findings Write could not buffer
	mu      sync.RWMutex     // serialises Write against Close
	closed  bool             // guarded by mu: Close has run
	once    sync.Once
	err     error // set by Close: closing the file failed

	abandoned atomic.Bool // set by CloseWithin when its bound passed
}

// OpenLog opens the violation log at path, appending (created with mode
// 0600; a symbolic link or a file that is not regular is refused, an
// existing file others may access is made 0600 with a notice on diag). "-" writes to diag, the command's standard error (os.Stderr when
// diag is nil). diag also receives the one-line notice when writing the log
// fails. An error means the log could not be opened (a missing directory,
// say); the command should exit 2 with that one line.
func OpenLog(path string, diag io.Writer) (*Log, error) {
	if diag == nil {
		diag = os.Stderr
	}
	if path == "-" {
		return NewLog(diag, nil, diag), nil
	}
	// Never blocks (a FIFO), never follows a link, never keeps a file
	// others can read: see safefile.OpenAppend.
	f, notice, err := safefile.OpenAppend(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open log: %w", err)
	}
	if notice != "" {
		printable.Fprintf(diag, "ahp-tap: violation log: %s\n", notice)
	}
	return NewLog(f, f, diag), nil
}

// OpenLogBestEffort opens the violation log like OpenLog, but a log that
// cannot be opened (a read-only directory, say) does not stop the caller:
// the failure is reported once on diag and the returned Log discards
// findings (Failed reports true). Transports that must never disturb
// traffic (a stdio tap started by a harness) use it.
func OpenLogBestEffort(path string, diag io.Writer) *Log {
	l, err := OpenLog(path, diag)
	if err == nil {
		return l
	}
	if diag == nil {
		diag = os.Stderr
	}
	printable.Fprintf(diag, "ahp-tap: %v; findings are not logged, traffic is not affected\n", err)
	l = NewLog(io.Discard, nil, nil)
	l.out.failed.Store(true)
	return l
}

// NewLog starts a log writing to w. closer, when not nil, is closed by
// Close (pass the file that w is). diag receives the notice when w fails.
func NewLog(w io.Writer, closer io.Closer, diag io.Writer) *Log {
	if diag == nil {
		diag = io.Discard
	}
	out := &failOnce{w: w, diag: diag}
	l := &Log{
		zl:     zerolog.New(out),
		out:    out,
		closer: closer,
		in:     make(chan tap.Finding, LogBuffer),
		done:   make(chan struct{}),
	}
	go l.loop()
	return l
}

// Write implements tap.Sink. It never blocks: a finding that does not fit
// in the buffer is dropped and counted (see Dropped).
func (l *Log) Write(f tap.Finding) {
	if l == nil {
		return
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return
	}
	select {
	case l.in <- f:
	default:
		l.dropped.Add(1)
	}
}

// WriteWait is Write for callers that can afford to wait (offline
// commands such as replay, where no traffic is held up): it blocks until
// the finding is buffered and never drops it.
func (l *Log) WriteWait(f tap.Finding) {
	if l == nil {
		return
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return
	}
	l.in <- f // the writer goroutine drains in without taking mu
}

// Dropped returns how many findings were not logged because the buffer was
// full (or the log was closed).
func (l *Log) Dropped() uint64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
}

// Failed reports whether writing the log has failed (it was reported on
// the diagnostic writer when it happened).
func (l *Log) Failed() bool {
	if l == nil {
		return false
	}
	return l.out.failed.Load()
}

// Close writes every buffered finding, records how many were dropped (a
// TAP-1 record), and closes the file. It is idempotent. It returns an
// error only when closing the file fails; a write failure has already been
// reported on the diagnostic writer.
func (l *Log) Close() error { return l.CloseWithin(0) }

// CloseWithin is Close bounded in time (0: no bound): when the writer has
// not written what is buffered within d (stderr not read, a file on a hung
// mount), the rest is abandoned, one line on the diagnostic writer says how
// many findings were lost, and the file is left to the process's exit.
// Live taps close with a bound so that no log write holds up their exit.
func (l *Log) CloseWithin(d time.Duration) error {
	if l == nil {
		return nil
	}
	l.once.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.in)
		l.mu.Unlock()
		if d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-l.done:
			case <-t.C:
				lost := uint64(len(l.in)) + l.dropped.Load()
				l.abandoned.Store(true)
				fmt.Fprintf(l.out.diag, "ahp-tap: the violation log was not written within %s of exiting; %d findings are missing from it (traffic was not affected)\n", d, lost)
				return
			}
		} else {
			<-l.done
		}
		if n := l.dropped.Load(); n > 0 {
			l.record(tap.TapIncomplete.At(nil, tap.Warn, "", "%d findings were not written to this log: its buffer was full (traffic was not affected)", n))
			l.out.flush()
		}
		if l.closer != nil {
			l.err = l.closer.Close()
		}
	})
	return l.err
}

func (l *Log) loop() {
	defer close(l.done)
	for f := range l.in {
		if l.abandoned.Load() {
			return // CloseWithin gave up on what is left
		}
		l.record(f)
		// Lines gather while more findings wait, so that a flood of them
		// (a rule broken on every frame) costs a write per batch, not
		// per line; a lone finding is written at once.
		if len(l.in) == 0 || len(l.out.buf) >= logBatch {
			l.out.flush()
		}
	}
}

// logBatch bounds the lines gathered into one write: PIPE_BUF, so that a
// batch written to a pipe (--log - on a harness's stderr) is never
// interleaved with another writer's lines.
const logBatch = 4096

// record adds one finding as one JSON line to the batch being gathered.
func (l *Log) record(f tap.Finding) {
	if l.out.failed.Load() {
		return
	}
	e := l.zl.WithLevel(zlevel(f.Level)).
		Str("time", time.Now().UTC().Format(time.RFC3339Nano)).
		Str("check", f.Check).
		Str("requirement", f.Requirement).
		Str("rule", f.Rule).
		Str("pointer", f.Pointer)
	if f.Seq > 0 {
		e = e.Uint64("seq", f.Seq)
	}
	if f.Dir != 0 {
		e = e.Str("direction", f.Dir.String())
	}
	if f.Conn != "" {
		e = e.Str("conn", f.Conn)
	}
	if f.RPCID != "" {
		e = e.Str("rpcId", f.RPCID)
	}
	if f.EventID != "" {
		e = e.Str("eventId", f.EventID)
	}
	if f.EventType != "" {
		e = e.Str("eventType", f.EventType)
	}
	if f.Binds != 0 {
		e = e.Str("binds", f.Binds.String())
	}
	if f.DirGuessed {
		e = e.Bool("directionGuessed", true)
	}
	if !f.Time.IsZero() {
		e = e.Str("frameTime", f.Time.UTC().Format(time.RFC3339Nano))
	}
	e.Msg(f.Message)
}

// zlevel maps a finding level to zerolog's, whose names are the same
// ("error", "warn", "info").
func zlevel(l tap.Level) zerolog.Level {
	switch l {
	case tap.Error:
		return zerolog.ErrorLevel
	case tap.Warn:
		return zerolog.WarnLevel
	}
	return zerolog.InfoLevel
}

// failOnce passes writes to w until one fails; it then reports the failure
// once on diag and swallows everything after, so a broken log never
// disturbs the caller. Only the log's writer goroutine (and Close, after
// it) writes to it.
type failOnce struct {
	w      io.Writer
	diag   io.Writer
	failed atomic.Bool // set after the first failed write
	buf    []byte      // whole lines not yet written (see flush)
}

// Write gathers p (one whole JSON line from zerolog) for the next flush.
func (o *failOnce) Write(p []byte) (int, error) {
	if !o.failed.Load() {
		o.buf = append(o.buf, p...)
	}
	return len(p), nil
}

// flush writes the gathered lines with one Write.
func (o *failOnce) flush() {
	if len(o.buf) == 0 || o.failed.Load() {
		o.buf = o.buf[:0]
		return
	}
	n, err := o.w.Write(o.buf)
	if err == nil && n < len(o.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		o.failed.Store(true)
		printable.Fprintf(o.diag, "ahp-tap: cannot write the violation log (%v); findings are no longer logged, traffic is not affected\n", err)
	}
	if cap(o.buf) > 4*logBatch {
		o.buf = nil // one long line does not keep its memory
	} else {
		o.buf = o.buf[:0]
	}
}
