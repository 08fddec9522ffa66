package tap

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQueue is the default depth of an Auditor's queue, in frames.
const DefaultQueue = 4096

// A Recorder is told about every frame the auditor takes, before the rules
// see it (a capture file, say). It runs on the audit goroutine, never on the
// forwarding path.
type Recorder interface {
	Record(f *Frame)
	RecordNote(n Note)
}

// An Auditor runs a Session off the forwarding path. Submit never blocks:
// when the queue is full the frame is dropped and counted, and the count
// reaches the session as a NoteDropped before the next item it takes (so
// the recording has it where the rules had it) and as a TAP-1 finding when
// the auditor closes. Findings go to the session's sink on the audit
// goroutine.
type Auditor struct {
	session *Session
	cfg     AuditorConfig

	in      chan auditItem // bounded queue of frames to audit; closed by Close
	done    chan struct{}  // closed when the audit goroutine has drained in
	dropped atomic.Uint64  // frames Submit could not queue
	noted   uint64         // audit goroutine only: drops already told to the session
	mu      sync.Mutex     // serialises Submit against Close
	closed  bool           // guarded by mu: Close has run
	once    sync.Once
}

// AuditorConfig tunes an Auditor.
type AuditorConfig struct {
	// Queue is the depth of the queue in frames and notes (0:
	// DefaultQueue).
	Queue int
	// Begin runs first thing on the audit goroutine (to lower its
	// priority, say). May be nil.
	Begin func()
	// Taken runs on the audit goroutine for each frame taken off the
	// queue, before the session sees it (to release a byte budget, say).
	// May be nil.
	Taken func(f *Frame)
}

// NewAuditor starts an auditor around an existing engine with a queue of
// the given depth (0 means DefaultQueue). recorder may be nil. It is
// Session.Audit for a session of that one engine.
func NewAuditor(e *Engine, sink Sink, recorder Recorder, queue int) *Auditor {
	return NewEngineSession(e, sink, recorder).Audit(AuditorConfig{Queue: queue})
}

// Audit starts an auditor that feeds s on a goroutine of its own. From
// then on s belongs to the auditor until Close returns.
func (s *Session) Audit(cfg AuditorConfig) *Auditor {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	a := &Auditor{session: s, cfg: cfg, in: make(chan auditItem, cfg.Queue), done: make(chan struct{})}
	go a.loop()
	return a
}

// Submit queues f for auditing without blocking. It reports false when f
// was dropped because the queue was full or the auditor is closed. The
// auditor owns f after a successful Submit.
func (a *Auditor) Submit(f *Frame) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		a.dropped.Add(1)
		return false
	}
	select {
	case a.in <- auditItem{f: f}:
		return true
	default:
		a.dropped.Add(1)
		return false
	}
}

// Drop counts n frames lost before they could be submitted (the transport
// dropped its copy of the bytes).
func (a *Auditor) Drop(n uint64) { a.dropped.Add(n) }

// Dropped returns the number of frames not audited so far.
func (a *Auditor) Dropped() uint64 { return a.dropped.Load() }

// do runs fn on the audit goroutine after every frame submitted so far has
// been checked, and waits for it. It does nothing once the auditor is
// closed.
func (a *Auditor) do(fn func(s *Session)) {
	j := &auditJob{fn: fn, done: make(chan struct{})}
	for {
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			return
		}
		select {
		case a.in <- auditItem{job: j}:
			a.mu.Unlock()
			<-j.done
			return
		default:
			// The queue is full of frames; never block Submit on it.
			a.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}
}

// Note hands a transport fact to the rules in order with the frames
// submitted before it. Notes are rare and never dropped: Note waits for room
// in the queue, so call it from a goroutine that does not forward bytes.
func (a *Auditor) Note(n Note) {
	a.do(func(s *Session) { s.Note(n) })
}

// An Item is a frame or a transport note for SubmitAll: exactly one of
// Frame and Note is set.
type Item struct {
	Frame *Frame
	Note  *Note
}

// SubmitAll queues items in order, all of them or none, without blocking,
// so that related items (a request and what answered it) are audited
// together or dropped together: a dropped request must not turn its
// response into an unsolicited one. It reports false, counting every item
// as dropped, when the queue has no room for all of them.
func (a *Auditor) SubmitAll(items ...Item) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Every sender (Submit, Do, SubmitAll) sends under mu, and the audit
	// goroutine only takes: the room seen here cannot shrink before the
	// sends below.
	if a.closed || cap(a.in)-len(a.in) < len(items) {
		a.dropped.Add(uint64(len(items)))
		return false
	}
	for _, it := range items {
		if it.Frame != nil {
			a.in <- auditItem{f: it.Frame}
			continue
		}
		n := *it.Note
		a.in <- auditItem{job: &auditJob{fn: func(s *Session) { s.Note(n) }, done: make(chan struct{})}}
	}
	return true
}

// An auditItem is a frame to check or a job to run, in queue order.
type auditItem struct {
	f   *Frame
	job *auditJob
}

type auditJob struct {
	fn   func(s *Session)
	done chan struct{} // closed when fn has run
}

func (a *Auditor) loop() {
	defer close(a.done)
	if a.cfg.Begin != nil {
		a.cfg.Begin()
	}
	for it := range a.in {
		a.noteDrops()
		if it.job != nil {
			it.job.fn(a.session)
			close(it.job.done)
			continue
		}
		if a.cfg.Taken != nil {
			a.cfg.Taken(it.f)
		}
		a.session.Frame(it.f)
	}
	a.noteDrops()
}

// noteDrops tells the session of the frames dropped since it was last
// told, before it takes the next item: the drop is recorded, and acted on,
// at the same place in the live run and in its replay.
func (a *Auditor) noteDrops() {
	if d := a.dropped.Load(); d > a.noted {
		a.session.Lost(d - a.noted)
		a.noted = d
	}
}

// Close stops taking frames, drains the queue, closes the session (the
// rules' end-of-stream duties, TAP-1 for frames not audited), and returns
// when every finding has been written to the sink. It is idempotent.
func (a *Auditor) Close() {
	a.once.Do(func() {
		a.mu.Lock()
		a.closed = true
		close(a.in)
		a.mu.Unlock()
		<-a.done
		a.noteDrops() // frames dropped while the queue drained
		a.session.Close()
	})
}
