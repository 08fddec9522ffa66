package tap

import (
	"container/heap"
	"time"

	"github.com/ahp-tap/ahp-tap/vocab"
)

// Deadlines as they pass (issue 21 item 8). A live feeder that sees no
// traffic past an intercept's deadline tells its session the time
// (Session.Clock); the session records a NoteDeadline, in order with the
// frames, and the rules judge the intercepts whose deadline passed by then
// (CORR-3) at once rather than when the stream ends. A capture keeps the
// note where the live run took it, so a replay reports the same finding at
// the same place. Offline inputs (check, HAR) have no such notes: their
// deadlines are judged at the answer or at the end, as before.

// A dueEntry is a pending intercept's deadline: when it falls, and the
// request it belongs to (by id key and sequence number, not by pointer, so
// that an answered exchange is not kept alive here).
type dueEntry struct {
	at  time.Time
	key string
	seq uint64
}

type dueHeap []dueEntry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// push is heap.Push without boxing e in an interface (an allocation per
// intercept): append, then up, as heap.Push does (heap.Fix of the last
// element only moves it up).
func (h *dueHeap) push(e dueEntry) {
	*h = append(*h, e)
	heap.Fix(h, len(*h)-1)
}

// pop is heap.Pop without boxing: the root swapped with the last element,
// the heap shrunk, the new root moved down, as heap.Pop does.
func (h *dueHeap) pop() dueEntry {
	old := *h
	n := len(old) - 1
	old[0], old[n] = old[n], old[0]
	e := old[n]
	old[n] = dueEntry{}
	*h = old[:n]
	if n > 0 {
		heap.Fix(h, 0)
	}
	return e
}

// watchDeadline remembers the deadline of x, a request just recorded as
// pending, when it has one. The heap holds at most about twice the
// pending requests: past that it is rebuilt from them.
func (c *Conversation) watchDeadline(x *Exchange) {
	if x.Method != vocab.MethodIntercept || x.Deadline <= 0 || x.Request == nil || x.Request.Time.IsZero() {
		return
	}
	c.deadlines.push(dueEntry{at: x.Request.Time.Add(x.Deadline), key: x.Key, seq: x.Request.Seq})
	if n := len(c.deadlines); n > 1024 && n > 2*len(c.pending) {
		h := c.deadlines[:0]
		for _, e := range c.deadlines {
			if c.pendingEntry(e) != nil {
				h = append(h, e)
			}
		}
		clear(c.deadlines[len(h):])
		c.deadlines = h
		heap.Init(&c.deadlines)
	}
}

// pendingEntry is the exchange e stands for, while it is still pending.
func (c *Conversation) pendingEntry(e dueEntry) *Exchange {
	x := c.pending[e.key]
	if x == nil || x.Response != nil || x.Request == nil || x.Request.Seq != e.seq {
		return nil
	}
	return x
}

// NextDeadline returns when the earliest deadline of a pending intercept
// falls that no NoteDeadline has judged yet; zero when there is none.
func (c *Conversation) NextDeadline() time.Time {
	for len(c.deadlines) > 0 {
		top := c.deadlines[0]
		if top.at.After(c.clock) && c.pendingEntry(top) != nil {
			return top.at
		}
		c.deadlines.pop()
	}
	return time.Time{}
}

// advance takes a NoteDeadline at t: the intercepts still pending whose
// deadline passed before t are Due to the rules taking that note.
func (c *Conversation) advance(t time.Time) {
	c.due = c.due[:0]
	for len(c.deadlines) > 0 && !c.deadlines[0].at.After(t) {
		e := c.deadlines.pop()
		if x := c.pendingEntry(e); x != nil && e.at.Before(t) {
			c.due = append(c.due, x)
		}
	}
	if t.After(c.clock) {
		c.clock = t
	}
}

// Due returns, while a NoteDeadline is being judged, the pending
// intercepts whose deadline passed by its time, in deadline order.
func (c *Conversation) Due() []*Exchange { return c.due }

// NextDeadline returns the earliest deadline of a pending intercept of
// the session that no NoteDeadline has judged yet; zero when there is
// none. A live feeder calls Clock once it has seen no traffic past it.
func (s *Session) NextDeadline() time.Time {
	var next time.Time
	for _, e := range s.order {
		if t := e.conv.NextDeadline(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// Clock tells the session that every frame of its link read before t has
// been handed to it. When the deadline of a pending intercept passed by
// then, it records a NoteDeadline at t and the rules judge it (CORR-3),
// as on replay of the capture. A Clocker watching the session is told t
// after that.
func (s *Session) Clock(t time.Time) {
	if s.closed {
		return
	}
	if next := s.NextDeadline(); !next.IsZero() && next.Before(t) {
		s.Note(Note{Kind: NoteDeadline, Time: t, Conn: s.cfg.Conn})
	}
	if c, ok := s.cfg.Watch.(Clocker); ok {
		c.Clock(t)
	}
}

// NextClock is when a live feeder whose queue is empty should call Clock
// next (zero: only when a frame comes): a little after the next deadline
// of a pending intercept, and within QuietClock from now while a Clocker
// watches the session.
func (s *Session) NextClock() time.Time {
	next := s.NextDeadline()
	if !next.IsZero() {
		next = next.Add(ClockGrace)
	}
	if _, ok := s.cfg.Watch.(Clocker); ok && !s.closed {
		if quiet := time.Now().Add(QuietClock); next.IsZero() || quiet.Before(next) {
			next = quiet
		}
	}
	return next
}

// QuietClock is how often a live feeder tells a Clocker watching its
// session the time while its link is quiet.
const QuietClock = 250 * time.Millisecond

// ClockGrace is how long after a deadline a live feeder tells its session
// the time (Clock at now less ClockGrace), so that a frame read just
// before the deadline and still on its way to the audit is judged first.
const ClockGrace = 20 * time.Millisecond

// EarliestSend is the earliest time the harness may have sent x's request,
// by what the tap knows: when it read it, or, for the first request of a
// stdio tap, when the tap's process began (NoteStart.Since): the harness
// writes it into the pipe at once, and the tap reads it only once it has
// started its backend. A harness measures its deadline from its send.
func (c *Conversation) EarliestSend(x *Exchange) time.Time {
	if x.Request == nil {
		return time.Time{}
	}
	if x.Request.Seq == c.firstSeq && !c.since.IsZero() && c.since.Before(x.Request.Time) {
		return c.since
	}
	return x.Request.Time
}

// MinDeadline is the shortest deadline an intercept of this configuration
// can have: --timeout, and the timeoutMs of the hook's intercept
// subscriptions (0: none known). A transport that hands over a request
// only with its answer (HTTP) hands it over alone once this much has
// passed without an answer, so that its deadline can be judged as it
// passes.
func (c Config) MinDeadline() time.Duration {
	min := c.Timeout
	if c.HookID == "" || c.Registration == nil {
		return min
	}
	for _, s := range FindHook(c.Registration, c.HookID).Get("subscriptions").arr() {
		if m, _ := s.Get("mode").Text(); m != "intercept" {
			continue
		}
		if d := deadlineOf(s.Get("timeoutMs")); d > 0 && (min == 0 || d < min) {
			min = d
		}
	}
	return min
}
