package tap

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQueue is the default depth of an Auditor's queue, in frames.
const DefaultQueue = 4096

// DefaultBudget is the default cap on the bytes of frames waiting in an
// Auditor's queue.
const DefaultBudget = 64 << 20

// A Recorder is told about every frame the auditor takes, before the rules
// see it (a capture file, say). It runs on the audit goroutine, never on the
// forwarding path.
type Recorder interface {
	Record(f *Frame)
	RecordNote(n Note)
}

// An Auditor runs a Session off the forwarding path. Its queue is bounded
// in frames (AuditorConfig.Queue) and in bytes (AuditorConfig.Budget).
// Submit never blocks unless the auditor is Complete: when the queue has no
// room the frame is dropped and counted, and the count
// reaches the session as a NoteDropped before the next item it takes (so
// the recording has it where the rules had it) and as a TAP-1 finding when
// the auditor closes. Findings go to the session's sink on the audit
// goroutine.
type Auditor struct {
	session *Session
	cfg     AuditorConfig

	in        chan auditItem // bounded queue of frames to audit; closed by Close
	done      chan struct{}  // closed when the audit goroutine has drained in
	dropped   atomic.Uint64  // frames Submit could not queue
	noted     uint64         // audit goroutine only: drops already told to the session
	queued    atomic.Int64   // bytes charged to the budget: frames in in, and copies reserved in flight (Reserve); never above cfg.Budget
	peak      atomic.Int64   // the most queued has been
	cut       atomic.Uint64  // copies in flight cut to a prefix for want of budget (Cut)
	waiters   atomic.Int32   // senders waiting on room for room
	mu        sync.Mutex     // serialises Submit against Close
	room      *sync.Cond     // on mu: broadcast by the audit goroutine when it takes an item and someone waits
	closed    bool           // guarded by mu: Close has run
	once      sync.Once
	abandon   atomic.Bool // set by CloseWithin when its bound passed: the loop skips what is left
	timer     *time.Timer // audit goroutine only: wakes next when a deadline is due
	notBefore time.Time   // audit goroutine only: Clock vouched short of the time waited for; ask again from then
}

// AuditorConfig tunes an Auditor.
type AuditorConfig struct {
	// Queue is the depth of the queue in frames and notes (0:
	// DefaultQueue).
	Queue int
	// Budget caps the bytes of the frames waiting in the queue (the
	// length of their Raw; 0: DefaultBudget). A frame that would take the
	// queue above it is dropped and counted like one that finds the queue
	// full, and a frame larger than the budget is never queued.
	Budget int64
	// Complete makes Submit and SubmitAll wait for room instead of
	// dropping (back-pressure on whoever forwards): every frame that fits
	// the budget is audited. The caller decides what waiting costs.
	Complete bool
	// Begin runs first thing on the audit goroutine (to lower its
	// priority, say). May be nil.
	Begin func()
	// Taken runs on the audit goroutine for each frame taken off the
	// queue, before the session sees it (to release a byte budget, say).
	// May be nil.
	Taken func(f *Frame)
	// Clock, when set, says up to when every frame read by now has been
	// submitted (or will be, with a later time): a frame's source stops
	// vouching for its time only once it is in the queue. The zero time
	// vouches for nothing yet; a time short of what the auditor waited
	// for is asked again after ClockRetry. With it, the auditor
	// tells its session the time (Session.Clock) when a pending
	// intercept's deadline has passed and the queue is empty, so that
	// CORR-3 is reported as the deadline passes (issue 21 item 8).
	Clock func(now time.Time) time.Time
}

// Audit starts an auditor that feeds s on a goroutine of its own. From
// then on s belongs to the auditor until Close returns.
func (s *Session) Audit(cfg AuditorConfig) *Auditor {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	a := &Auditor{session: s, cfg: cfg, in: make(chan auditItem, cfg.Queue), done: make(chan struct{})}
	a.room = sync.NewCond(&a.mu)
	go a.loop()
	return a
}

// Submit queues f for auditing. It never blocks unless the auditor is
// Complete. It reports false when f was dropped because the queue had no
// room for it (in frames or bytes) or the auditor is closed. The auditor
// owns f after a successful Submit.
func (a *Auditor) Submit(f *Frame) bool {
	return a.SubmitAll(Item{Frame: f})
}

// Drop counts n frames lost before they could be submitted (the transport
// dropped its copy of the bytes).
func (a *Auditor) Drop(n uint64) { a.dropped.Add(n) }

// Dropped returns the number of frames not audited so far.
func (a *Auditor) Dropped() uint64 { return a.dropped.Load() }

// Queued returns the bytes charged to the budget now (frames waiting in
// the queue and copies reserved in flight), and the most they have been.
func (a *Auditor) Queued() (now, peak int64) { return a.queued.Load(), a.peak.Load() }

// Budget is the auditor's byte budget.
func (a *Auditor) Budget() int64 { return a.cfg.Budget }

// Complete reports whether the auditor waits for room instead of dropping.
func (a *Auditor) Complete() bool { return a.cfg.Complete }

// Reserve takes n bytes of the budget for an audit copy still being
// filled (an HTTP body in flight), so that copies in flight and frames
// queued share one bound. It never blocks: it reports false, taking
// nothing, when fewer than n bytes are left. Reservations may take the
// budget only up to 7/8 of it: the last eighth is kept for frames
// submitted without one (small bodies, and the prefixes of copies cut for
// want of budget), so that large bodies in flight do not starve them.
// The bytes go back with Release, or pass to the queue with the copy
// (Item.Reserved).
func (a *Auditor) Reserve(n int64) bool { return a.charge(n, a.cfg.Budget-a.cfg.Budget/8) }

// Release gives back n bytes taken by Reserve.
func (a *Auditor) Release(n int64) {
	if n <= 0 {
		return
	}
	a.queued.Add(-n)
	if a.waiters.Load() > 0 {
		a.mu.Lock()
		a.room.Broadcast()
		a.mu.Unlock()
	}
}

// Cut counts a copy in flight that the budget could not hold: the caller
// keeps only a prefix of it, and the frame says it is truncated (TAP-1).
func (a *Auditor) Cut() { a.cut.Add(1) }

// Cuts returns the number of copies cut to a prefix so far (Cut).
func (a *Auditor) Cuts() uint64 { return a.cut.Load() }

// charge adds n bytes to the budget's use unless that would take it above
// limit (at most the budget).
func (a *Auditor) charge(n, limit int64) bool {
	if n <= 0 {
		return true
	}
	for {
		q := a.queued.Load()
		if q+n > limit {
			return false
		}
		if a.queued.CompareAndSwap(q, q+n) {
			for p := a.peak.Load(); q+n > p && !a.peak.CompareAndSwap(p, q+n); p = a.peak.Load() {
			}
			return true
		}
	}
}

// do runs fn on the audit goroutine after every frame submitted so far has
// been checked, and waits for it. It does nothing once the auditor is
// closed.
func (a *Auditor) do(fn func(s *Session)) {
	j := &auditJob{fn: fn, done: make(chan struct{})}
	a.mu.Lock()
	// When the queue is full of frames, wait for the audit goroutine to
	// take one (never block Submit on it).
	a.waitUntil(func() bool { return len(a.in) < cap(a.in) })
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.in <- auditItem{job: j}
	a.mu.Unlock()
	<-j.done
}

// waitUntil waits, with a.mu held, until ok() or the auditor is closed.
// ok is looked at again after waiters is raised: the audit goroutine
// lowers the queue before it reads waiters, so either ok sees the room it
// made or the goroutine sees the waiter and wakes it.
func (a *Auditor) waitUntil(ok func() bool) {
	a.waiters.Add(1)
	for !a.closed && !ok() {
		a.room.Wait()
	}
	a.waiters.Add(-1)
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
	// Reserved is the budget the caller took with Reserve for Frame's
	// bytes while it filled them. SubmitAll takes it over: it stays
	// charged while the frame waits and is released when the frame is
	// taken or dropped. A frame is charged the larger of Reserved and
	// len(Raw); only the difference must fit when it is submitted.
	Reserved int64
	// Prepare, when set with Frame, runs on the audit goroutine before the
	// frame is taken (Config.Taken) and checked: work the sender leaves to
	// the audit side so as not to hold up forwarding, such as building an
	// HTTP envelope and redacting the body. It is not run for a frame that
	// is dropped. Frame is charged to the budget by its length when
	// submitted, so Prepare should not make it much larger.
	Prepare func(*Frame) `json:"-"`
}

// SubmitAll queues items in order, all of them or none, without blocking,
// so that related items (a request and what answered it) are audited
// together or dropped together: a dropped request must not turn its
// response into an unsolicited one. It reports false, counting every item
// as dropped, when the queue has no room for all of them.
func (a *Auditor) SubmitAll(items ...Item) bool {
	var extra, held int64 // bytes to charge now, bytes reserved already
	for _, it := range items {
		held += it.Reserved
		if it.Frame != nil {
			extra += max(int64(len(it.Frame.Raw)), it.Reserved) - it.Reserved
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Every sender (Submit, Do, SubmitAll) sends under mu, and the audit
	// goroutine only takes: the room seen here cannot shrink before the
	// sends below. Reserve may take budget at any time, so the bytes are
	// charged, not just looked at.
	charged := false
	fits := func() bool {
		charged = cap(a.in)-len(a.in) >= len(items) && a.charge(extra, a.cfg.Budget)
		return charged
	}
	if a.cfg.Complete && extra+held <= a.cfg.Budget && len(items) <= cap(a.in) {
		a.waitUntil(fits) // back-pressure: whoever forwards waits
	} else if !a.closed {
		fits()
	}
	if !charged { // closed, or no room
		a.release(held) // the reservations it took over
		a.dropped.Add(uint64(len(items)))
		return false
	}
	for _, it := range items {
		if it.Frame != nil {
			a.in <- auditItem{f: it.Frame, prep: it.Prepare, cost: max(int64(len(it.Frame.Raw)), it.Reserved)}
			continue
		}
		n := *it.Note
		a.in <- auditItem{job: &auditJob{fn: func(s *Session) { s.Note(n) }, done: make(chan struct{})}, cost: it.Reserved}
	}
	return true
}

// release gives back n bytes with a.mu held (see Release).
func (a *Auditor) release(n int64) {
	if n > 0 {
		a.queued.Add(-n)
		a.room.Broadcast()
	}
}

// An auditItem is a frame to check or a job to run, in queue order.
type auditItem struct {
	f    *Frame
	prep func(*Frame) // Item.Prepare
	job  *auditJob
	cost int64 // bytes charged to the budget until the item is taken
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
	for {
		var it auditItem
		var ok bool
		select {
		case it, ok = <-a.in:
			// An item was waiting: taken without arming the deadline
			// timer, which would only have let it be taken (the time is
			// told with the queue empty). At saturation the queue is
			// rarely empty: this spares a timer reset and stop, a clock
			// read and a two-way select per item.
		default:
			it, ok = a.next()
		}
		if !ok {
			break
		}
		a.wake() // the item taken made room for one more
		if it.f == nil || a.abandon.Load() {
			a.queued.Add(-it.cost)
		}
		if a.abandon.Load() {
			// CloseWithin gave up and counted what was left.
			if it.job != nil {
				close(it.job.done)
			}
			continue
		}
		a.noteDrops()
		if it.job != nil {
			it.job.fn(a.session)
			close(it.job.done)
			continue
		}
		if it.prep != nil {
			it.prep(it.f)
		}
		if a.cfg.Taken != nil {
			a.cfg.Taken(it.f)
		}
		a.session.Frame(it.f)
		// A frame's bytes stay charged while it is checked (its decoded
		// tree is as large): the budget bounds them until the rules are
		// done with it.
		a.queued.Add(-it.cost)
		if it.cost > 0 {
			a.wake()
		}
	}
	a.noteDrops()
}

// next waits for the next item; while a pending intercept's deadline is
// due, it tells the session the time when the deadline passes with the
// queue empty (Clock), and every QuietClock while a Clocker watches the
// session. ok is false once the queue is closed and drained.
func (a *Auditor) next() (it auditItem, ok bool) {
	for {
		next := a.nextClock()
		if next.IsZero() {
			it, ok = <-a.in
			return it, ok
		}
		if a.timer == nil {
			a.timer = time.NewTimer(time.Until(next))
		} else {
			a.timer.Reset(time.Until(next))
		}
		select {
		case it, ok = <-a.in:
			a.timer.Stop()
			return it, ok
		case <-a.timer.C:
			// The time first, then the queue: an item its source
			// stopped vouching for before the time was taken is in
			// the queue by then (Clock's contract), and when the
			// queue holds anything the time waits for it (select
			// picks either ready case). Told the time with items
			// queued, the session would judge their requests'
			// deadlines before seeing their answers: a false CORR-3.
			now := a.cfg.Clock(time.Now().Add(-ClockGrace))
			if len(a.in) == 0 {
				if now.Before(next.Add(-ClockGrace)) {
					// The source vouches for less than the time the loop
					// waits for (an HTTP response still streaming, a
					// stdio chunk with the feeder; zero: nothing): the
					// session's next clock is still due, so ask again
					// shortly, not at once, which would spin.
					a.notBefore = time.Now().Add(ClockRetry)
				}
				if !now.IsZero() && !a.abandon.Load() {
					a.session.Clock(now)
				}
				continue
			}
			it, ok = <-a.in // only this goroutine takes: it is there
			return it, ok
		}
	}
}

// nextClock is when the loop should tell the session the time
// (Session.NextClock; zero: never).
func (a *Auditor) nextClock() time.Time {
	if a.cfg.Clock == nil {
		return time.Time{}
	}
	next := a.session.NextClock()
	if !next.IsZero() && next.Before(a.notBefore) {
		next = a.notBefore
	}
	return next
}

// ClockRetry is how long an auditor waits to ask its Clock again after
// it vouched for less than the time the auditor waited for.
const ClockRetry = 2 * time.Millisecond

// wake wakes the senders waiting for room, if any (Complete, or a note).
// Taking mu first means a waiter is either inside Wait or has not yet
// looked at the room.
func (a *Auditor) wake() {
	if a.waiters.Load() > 0 {
		a.mu.Lock()
		a.room.Broadcast()
		a.mu.Unlock()
	}
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
func (a *Auditor) Close() { a.CloseWithin(0) }

// CloseWithin is Close bounded in time (issue 8 item 5: shutdown has a
// time limit): when the queue is not drained within d (0: no bound) the
// rest is abandoned, counted as not audited, and one TAP-1 finding says so;
// end-of-stream rules do not run then. The audit goroutine may still be
// inside a recorder or sink write that never returns; it is left behind.
// It reports whether the audit completed. It is idempotent.
func (a *Auditor) CloseWithin(d time.Duration) bool {
	complete := true
	a.once.Do(func() {
		a.mu.Lock()
		a.closed = true
		close(a.in)
		a.room.Broadcast() // waiting senders drop their items
		a.mu.Unlock()
		if d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-a.done:
			case <-t.C:
				complete = false
			}
		} else {
			<-a.done
		}
		if !complete {
			a.abandon.Store(true)
			left := uint64(len(a.in))
			a.dropped.Add(left)
			a.session.sink.Write(TapIncomplete.At(nil, Warn, "", "the shutdown bound (%s) passed with %d frames and notes still queued: they were not audited and end-of-stream checks did not run (forwarding was not affected); %d frames not audited in all", d, left, a.dropped.Load()))
			return
		}
		a.noteDrops() // frames dropped while the queue drained
		a.session.Close()
	})
	return complete
}
