package tap

import (
	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/vocab"

	"cmp"
	"math"
	"slices"
	"strings"
	"time"
)

// DefaultSnapshot is the protocol version ahp-tap checks against by default.
const DefaultSnapshot = "draft"

// An Exchange is one request and, once it arrives, its response. Rules about
// a response read the request's event and capabilities through it.
type Exchange struct {
	// Key is the IDKey of the JSON-RPC id.
	Key      string
	Method   string
	Request  *Frame
	Response *Frame
	// Event and Capabilities are params.event and params.capabilities of
	// the request (nil when absent).
	Event        *Value
	Capabilities *Value
	// Subscription is the registration subscription that covers this
	// request's event and method, when a hook is selected.
	Subscription *Value
	// Deadline is how long the backend had to answer (0: unknown).
	Deadline time.Duration
	// Outcome is filled when the response has been checked: one of the
	// Outcome* constants.
	Outcome string
	// Injected is the kind of the fault the tap injected for this request
	// (--inject: a NoteInjected; package inject), "" for none. Outcome and
	// Edit stay the backend's own; what the harness got is the fault's.
	Injected string
	// InjectedAt is when the tap injected it (the NoteInjected's time):
	// for a fault that answers in the backend's place, when the harness
	// got its answer.
	InjectedAt time.Time
	// Edit holds what the edit evaluator concluded for the response
	// (an effective value per target, or the reasons it was rejected).
	Edit any
	// Truncated is set when the request or the response was audited only
	// as a prefix (see ScanPrefix); MaybeAnswered when a truncated backend
	// frame whose id could not be read arrived while it was pending.
	Truncated, MaybeAnswered bool

	// cost is what the exchange counts against MaxPendingBytes while it
	// is pending.
	cost int
}

// Outcomes of an exchange, as a reader of a report needs them. The words are
// those of the AHP Inspector: no effect is not "allow".
const (
	OutcomeNoEffect    = "no_effect"
	OutcomeDeny        = "explicit_deny"
	OutcomeEffects     = "effects"
	OutcomeFailure     = "operational_failure"
	OutcomeUnanswered  = "unanswered"
	OutcomeAbandoned   = "abandoned_by_harness"
	OutcomeLate        = "late"
	OutcomeInvalid     = "invalid_response"
	OutcomeErrorAnswer = "error_response"
	// OutcomeInjected: a fault the tap injected on purpose (--inject)
	// ended the exchange (it killed the backend): nobody is judged by it.
	OutcomeInjected = "injected_by_tap"
	// OutcomeNotAudited: the request or its answer was audited only as a
	// truncated prefix, so the exchange could not be judged.
	OutcomeNotAudited = "not_audited"
)

// Correlation says how a response relates to the requests seen so far.
type Correlation uint8

// Response correlation states.
const (
	NotAResponse Correlation = iota
	// Matched: the response answers a pending request.
	Matched
	// Unsolicited: no request with this id was seen.
	Unsolicited
	// Duplicate: the request with this id was already answered.
	Duplicate
	// Unjudgeable: the response answers a request the tap audited only as
	// a truncated prefix (or may do so): it is paired, never reported as
	// unsolicited, and judged on its own, as in an excerpt.
	Unjudgeable
)

// EventKey identifies an event: (source, id) (AHP-CORE-004).
type EventKey struct {
	Source string `json:"source"`
	ID     string `json:"id"`
}

// An EventRecord is what the conversation remembers of an event to judge
// retries (BASE-6).
type EventRecord struct {
	Digest    string    `json:"digest"`
	RPCID     string    `json:"rpcId,omitempty"`
	Method    string    `json:"method"`
	SessionID string    `json:"sessionId,omitempty"`
	CallID    string    `json:"callId,omitempty"`
	Type      string    `json:"type,omitempty"`
	First     time.Time `json:"first"`
	// DeadlineMs is the deadline of the first delivery, 0 when unknown.
	DeadlineMs int64 `json:"deadlineMs,omitempty"`
	// Outcome of the last answered delivery (an Outcome* constant).
	Outcome string `json:"outcome,omitempty"`
	Seq     uint64 `json:"seq"`
}

// An EventStore remembers events across frames, and across processes when a
// harness starts one backend (and one tap) per event. Implementations must be
// safe for concurrent use.
type EventStore interface {
	Load(k EventKey) (EventRecord, bool)
	Store(k EventKey, r EventRecord)
}

// DefaultKeepEvents is how many events a MemoryStore remembers by default
// to judge retries (BASE-6).
const DefaultKeepEvents = 100_000

// DefaultKeepAnswered is how many answered exchanges a conversation keeps
// by default, so a tap that runs for days stays in bounded memory.
const DefaultKeepAnswered = 1024

// MaxPendingBytes bounds the memory of a conversation's unanswered
// requests. Each is kept whole (its answer is judged against it) and
// costs about pendingCost of its size; past the bound the oldest are
// forgotten, counted, and reported once (TAP-1): their answers, if any
// come, are not judged, and they are not reported unanswered. A backend
// with a handful of requests outstanding is far from it; a recording of a
// million unanswered intercepts is read in bounded memory (issue 28 item
// 8).
const MaxPendingBytes = 128 << 20

// pendingCost estimates the memory of a pending exchange: its frame's
// bytes, the decoded tree (about 24 bytes of Value per byte of JSON, as
// measured on intercept requests) and the exchange itself.
func pendingCost(f *Frame) int { return 1024 + 24*len(f.Raw) }

// A Conversation is the state of one harness↔backend link as the frames so
// far show it. It is owned by one Engine and not safe for concurrent use.
type Conversation struct {
	// Snapshot is the protocolVersion every message must carry.
	Snapshot string
	// Registration is the registration document, when given.
	Registration *Value
	// Hook is the selected backend entry of Registration, when given.
	Hook *Value
	// Timeout is a deadline given on the command line; it applies when no
	// subscription gives one.
	Timeout time.Duration
	// EditContext is the host context a standalone response is judged in
	// (`check --edit-context`), nil otherwise.
	EditContext *Value
	// Transport is the binding of the link, when known ("" for files).
	Transport Transport
	// Lifecycle is the stdio lifecycle ("persistent", "per_event") when known.
	Lifecycle string
	// Partial says the frames are an excerpt: correlation rules do not
	// report requests or responses whose other half is missing.
	Partial bool

	events    EventStore
	pending   map[string]*Exchange // by IDKey, not yet answered
	answered  map[string]*Exchange // by IDKey, answered
	order     []*Exchange          // every exchange, in request order
	cur       *Exchange            // the exchange of the frame being checked
	curCorr   Correlation
	prior     *EventRecord // the earlier sighting of the current frame's event
	ruleState []ruleStateEntry
	last      time.Time // time of the latest frame or note
	// analyses and results hold the analyses of the engine and what
	// each computed for the frame being checked (Result).
	analyses []*Analysis
	results  []any
	keep     int // Config.KeepAnswered
	// standalone holds response-only exchanges (AddStandalone).
	standalone []*Exchange
	// blind counts truncated harness frames whose id could not be read:
	// each may be the request an otherwise unsolicited response answers.
	blind int
	// forgotten counts exchanges dropped by forget and AddStandalone;
	// forgottenIDs those dropped by forget alone.
	forgotten, forgottenIDs int
	// unjudged is the exchange a response of correlation Unjudgeable
	// answers (nil when it answers a blind request).
	unjudged *Exchange
	// deadlines are the pending intercepts' deadlines, earliest first;
	// clock is the time of the latest NoteDeadline, and due what it found
	// (deadline.go).
	deadlines dueHeap
	clock     time.Time
	due       []*Exchange
	// since is when the stdio tap's process began (NoteStart.Since), and
	// firstSeq the sequence number of the first request, which may have
	// waited from then on to be read (EarliestSend).
	since    time.Time
	firstSeq uint64
	// pendingBytes is the cost of the pending exchanges; pendingQueue
	// lists them in request order from pendingHead on (entries answered
	// since are skipped), so the oldest is found in O(1) amortised.
	pendingBytes int
	pendingQueue []*Exchange
	pendingHead  int
	// pendingForgotten counts unanswered requests forgotten to stay within
	// MaxPendingBytes; compactAt is the length of order at which forget
	// next compacts it.
	pendingForgotten int
	compactAt        int
}

func newConversation(cfg Config) *Conversation {
	cfg = cfg.Resolved()
	c := &Conversation{
		Snapshot:     cfg.Snapshot,
		Registration: cfg.Registration,
		Timeout:      cfg.Timeout,
		EditContext:  cfg.EditContext,
		Transport:    cfg.Transport,
		Lifecycle:    cfg.Lifecycle,
		Partial:      cfg.Partial,
		events:       cfg.Events,
		pending:      make(map[string]*Exchange),
		answered:     make(map[string]*Exchange),
		keep:         cfg.KeepAnswered,
	}
	if c.keep == 0 {
		c.keep = DefaultKeepAnswered
	}
	if c.events == nil {
		c.events = &MemoryStore{}
	}
	if cfg.HookID != "" {
		c.Hook = FindHook(cfg.Registration, cfg.HookID)
	}
	return c
}

// Exchange returns the exchange the frame being checked belongs to: for a
// request, the one it opens; for a matched response, the one it answers
// (nil for an unsolicited or duplicate response, and for notifications).
func (c *Conversation) Exchange() *Exchange { return c.cur }

// LastTime is the time of the latest frame or note seen: the end of the
// stream, for deadlines judged at its end (CORR-3).
func (c *Conversation) LastTime() time.Time { return c.last }

// Correlation says how the response being checked relates to earlier requests.
func (c *Conversation) Correlation() Correlation { return c.curCorr }

// Answered returns the answered exchange with the given id key, if any.
func (c *Conversation) Answered(key string) *Exchange { return c.answered[key] }

// Remembers reports whether the conversation still holds an exchange with
// the id key: pending, or answered and not forgotten (Config.KeepAnswered).
// A response whose id it no longer remembers is Unsolicited, never
// Duplicate, so a rule may drop what it keeps per id once this is false.
func (c *Conversation) Remembers(key string) bool {
	_, pending := c.pending[key]
	_, answered := c.answered[key]
	return pending || answered
}

// IsPending reports whether x is still waiting for its answer: not
// answered, and not superseded by a retry with the same id.
func (c *Conversation) IsPending(x *Exchange) bool {
	return x.Response == nil && c.pending[x.Key] == x
}

// Pending returns the unanswered exchanges in request order.
func (c *Conversation) Pending() []*Exchange {
	var out []*Exchange
	for _, x := range c.order {
		if c.IsPending(x) {
			out = append(out, x)
		}
	}
	return out
}

// Exchanges returns every exchange in request order.
func (c *Conversation) Exchanges() []*Exchange { return c.order }

// PriorEvent returns the earlier sighting of the current frame's event
// (same source and id), or nil when this is the first.
func (c *Conversation) PriorEvent() *EventRecord { return c.prior }

// RuleState returns the state a rule keeps for this conversation, creating
// it with init on first use. Keys are rule IDs.
//
// The states are few (one per stateful rule or analysis, about ten) and
// several rules ask for theirs on every frame: a scan of them, each id
// compared by length first (and by pointer, a rule passing the same
// string each time), costs less than hashing the id for a map.
func (c *Conversation) RuleState(id string, init func() any) any {
	for i := range c.ruleState {
		if c.ruleState[i].id == id {
			return c.ruleState[i].state
		}
	}
	s := init()
	c.ruleState = append(c.ruleState, ruleStateEntry{id, s})
	return s
}

// A ruleStateEntry is the state of one rule (RuleState).
type ruleStateEntry struct {
	id    string
	state any
}

// SubscriptionFor returns the subscription of the selected hook that
// covers eventType in mode ("intercept" or "observe"), or nil.
func (c *Conversation) SubscriptionFor(eventType, mode string) *Value {
	return MatchSubscription(c.Hook, eventType, mode)
}

// begin correlates f before the rules run.
func (c *Conversation) begin(f *Frame) {
	c.cur, c.curCorr, c.prior, c.unjudged = nil, NotAResponse, nil, nil
	if !f.Time.IsZero() {
		c.last = f.Time
	}
	if f.Truncated {
		c.beginTruncated(f)
		return
	}
	switch m := f.Msg.(type) {
	case *Request:
		x := &Exchange{
			Key:          IDKey(m.ID),
			Method:       m.Method,
			Request:      f,
			Event:        m.Params.Get("event"),
			Capabilities: m.Params.Get("capabilities"),
		}
		if t, ok := x.Event.Get("type").Text(); ok && m.Method == vocab.MethodIntercept {
			x.Subscription = c.SubscriptionFor(t, "intercept")
		}
		if x.Deadline = deadlineOf(x.Subscription.Get("timeoutMs")); x.Deadline == 0 {
			x.Deadline = c.Timeout
		}
		c.cur = x
		c.lookupEvent(f)
	case *Notification:
		c.lookupEvent(f)
	case *Response:
		var buf [64]byte
		k := appendIDKey(buf[:0], m.ID) // looked up, not kept: no string made
		if x, ok := c.pending[string(k)]; ok && x.Truncated {
			c.unjudged, c.curCorr = x, Unjudgeable
		} else if ok {
			c.cur, c.curCorr = x, Matched
		} else if _, ok := c.answered[string(k)]; ok {
			c.curCorr = Duplicate
		} else if c.blind > 0 {
			c.blind--
			c.curCorr = Unjudgeable
		} else {
			c.curCorr = Unsolicited
		}
	}
}

// beginTruncated correlates a frame whose audit copy is only a prefix. The
// harness sends requests and notifications, the backend responses; what
// the prefix says (ScanPrefix) pairs them. A request whose id is in the
// prefix becomes a pending exchange marked Truncated; one whose id is not
// may be what the next unsolicited response answers. A truncated answer
// with a readable id closes its exchange; one without marks every pending
// exchange of its connection as possibly answered.
func (c *Conversation) beginTruncated(f *Frame) {
	pf := ScanPrefix(f.Raw)
	switch f.Dir {
	case FromHarness:
		if pf.ID == nil {
			c.blind++
			return
		}
		ev := &Value{Kind: Object}
		for _, m := range [][2]string{{"id", pf.EventID}, {"type", pf.EventType}} {
			if m[1] != "" {
				ev.Obj = append(ev.Obj, Member{Key: m[0], Val: &Value{Kind: String, Str: m[1]}})
			}
		}
		if len(ev.Obj) == 0 {
			ev = nil
		}
		c.cur = &Exchange{Key: IDKey(pf.ID), Method: pf.Method, Request: f, Event: ev,
			Truncated: true, Outcome: OutcomeNotAudited}
	case FromBackend:
		if pf.ID == nil {
			for _, x := range c.pending {
				if x.Request.Conn == f.Conn {
					x.MaybeAnswered = true
				}
			}
			return
		}
		if x, ok := c.pending[IDKey(pf.ID)]; ok {
			c.unjudged, c.curCorr = x, Unjudgeable
		}
	}
}

// Unjudged returns the exchange a response of correlation Unjudgeable
// answers, or nil.
func (c *Conversation) Unjudged() *Exchange { return c.unjudged }

func (c *Conversation) lookupEvent(f *Frame) {
	k, ok := eventKey(f.Event())
	if !ok {
		return
	}
	if r, ok := c.events.Load(k); ok {
		p := r // moved to the heap only when found
		c.prior = &p
	}
}

func eventKey(ev *Value) (EventKey, bool) {
	id, ok1 := ev.Get("id").Text()
	src, ok2 := ev.Get("source").Text()
	return EventKey{Source: src, ID: id}, ok1 && ok2 && id != ""
}

// end records f after the rules ran.
func (c *Conversation) end(f *Frame) {
	if x := c.unjudged; x != nil {
		x.Response, x.Truncated, x.Outcome = f, true, OutcomeNotAudited
		c.removePending(x)
		c.answered[x.Key] = x
		c.forget()
		return
	}
	if f.Truncated {
		if x := c.cur; x != nil {
			c.addPending(x) // as a request: its answer pairs with it
		}
		return
	}
	switch f.Msg.(type) {
	case *Request:
		x := c.cur
		c.addPending(x) // a retry replaces the earlier pending entry
		c.remember(f, x)
		c.watchDeadline(x)
		if c.firstSeq == 0 {
			c.firstSeq = f.Seq
		}
	case *Notification:
		c.remember(f, nil)
	case *Response:
		if c.curCorr != Matched {
			return
		}
		x := c.cur
		x.Response = f
		c.removePending(x)
		c.answered[x.Key] = x
		c.forget()
		if k, ok := eventKey(x.Event); ok {
			outcome := x.Outcome
			if inject.Kind(x.Injected).Synthetic() {
				// The harness never got this answer (an injected fault
				// took its place): a retry after it is not one after a
				// deny or an empty success (BASE-6).
				outcome = OutcomeFailure
			}
			if ms, ok := c.events.(*MemoryStore); ok {
				ms.setOutcome(k, outcome)
			} else if r, ok := c.events.Load(k); ok {
				r.Outcome = outcome
				c.events.Store(k, r)
			}
		}
		x.settle()
	}
}

// settle keeps of an answered exchange only what later checks and reports
// read (ids, sequence numbers, times, connection, the event's type, id and
// source), so that the answered exchanges a conversation keeps cost a few
// hundred bytes each whatever the size of their frames. Keeping them whole
// held 2×KeepAnswered requests: ~450 MiB live in the soak with 1 MiB
// requests among 1 KiB ones (memory bounded in bytes, issue 8).
//
// What it keeps takes two allocations: one settledExchange, and one string
// holding the text of all its strings (none of them a slice of the
// frames' bytes). One allocation per summary, event and string was ~6 a
// response, a measurable share of the audit's time.
func (x *Exchange) settle() {
	st := new(settledExchange)
	var cp textCopier
	x.Request = x.Request.summaryInto(&st.req, &cp)
	x.Response = x.Response.summaryInto(&st.resp, &cp)
	cp.own(&x.Method, x.Method) // a name outside the protocol's is a slice of the request's bytes
	if x.Event != nil {
		x.Event = st.ev.settle(x.Event, &cp)
	}
	x.Capabilities = nil
	cp.flush()
}

// A settledExchange holds what settle keeps of an exchange.
type settledExchange struct {
	req, resp frameSummary
	ev        settled
}

// A settled event is the object settle keeps of an exchange's event.
type settled struct {
	ev   Value
	ms   [3]Member
	vals [3]Value
}

// settle fills st with the members type, id and source of ev that are
// strings or numbers, their text copied out of the frame's bytes (by cp),
// and returns the object.
func (st *settled) settle(ev *Value, cp *textCopier) *Value {
	st.ev = Value{Kind: Object, Obj: st.ms[:0]}
	for _, k := range [3]string{"type", "id", "source"} {
		v := ev.Get(k)
		if v == nil || (v.Kind != String && v.Kind != Number) {
			continue
		}
		j := len(st.ev.Obj)
		st.vals[j] = Value{Kind: v.Kind}
		cp.clone(&st.vals[j].Str, v.Str)
		st.ev.Obj = append(st.ev.Obj, Member{Key: k, Val: &st.vals[j]})
	}
	return &st.ev
}

// A textCopier copies strings out of a frame's bytes into one new string:
// each copy or own names its destination and source, and flush makes the
// string and points every destination into it.
type textCopier struct {
	dst  [maxCopies]*string
	src  [maxCopies]string
	n    int
	size int
}

// maxCopies is the most strings settle copies: both frames' ids, the
// request's method (twice: frame and exchange) and three event members.
const maxCopies = 8

// clone has *dst become a copy of s at flush.
func (c *textCopier) clone(dst *string, s string) {
	if s == "" {
		*dst = ""
		return
	}
	c.dst[c.n], c.src[c.n] = dst, s
	c.n++
	c.size += len(s)
}

// own is clone for a name that may be one of the protocol's own, which is
// shared rather than copied.
func (c *textCopier) own(dst *string, s string) {
	if k, ok := knownStrings[s]; ok {
		*dst = k
		return
	}
	c.clone(dst, s)
}

// flush makes the copies.
func (c *textCopier) flush() {
	if c.n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(c.size)
	for _, s := range c.src[:c.n] {
		b.WriteString(s)
	}
	all := b.String()
	for i, s := range c.src[:c.n] {
		*c.dst[i], all = all[:len(s)], all[len(s):]
		c.src[i] = ""
	}
	c.n, c.size = 0, 0
}

// A frameSummary holds a summary of a frame (Frame.summary).
type frameSummary struct {
	f   Frame
	req Request
	res Response
	id  Value
}

// summary is f without its bytes and decoded tree: its place in the
// stream, its time and connection, and its JSON-RPC id and method. It is
// one allocation, and one more for the text of its strings, none of which
// is a slice of f's bytes (a method or id string left pointing into Raw
// would keep the whole frame).
func (f *Frame) summary() *Frame {
	var cp textCopier
	s := f.summaryInto(new(frameSummary), &cp)
	cp.flush()
	return s
}

// summaryInto is summary in b, its strings copied by cp (nil for a nil f).
func (f *Frame) summaryInto(b *frameSummary, cp *textCopier) *Frame {
	if f == nil {
		return nil
	}
	var id *Value
	switch m := f.Msg.(type) {
	case *Request:
		cp.own(&b.req.Method, m.Method)
		b.f.Msg, id = &b.req, m.ID
		if id != nil {
			b.req.ID = &b.id
		}
	case *Response:
		b.f.Msg, id = &b.res, m.ID
		if id != nil {
			b.res.ID = &b.id
		}
	}
	if id != nil {
		b.id = Value{Kind: id.Kind, Bool: id.Bool}
		cp.clone(&b.id.Str, id.Str)
	}
	s := &b.f
	s.Seq, s.Dir, s.Time, s.Transport, s.Conn, s.Size, s.HTTP = f.Seq, f.Dir, f.Time, f.Transport, f.Conn, f.Size, f.HTTP
	return s
}

func (c *Conversation) remember(f *Frame, x *Exchange) {
	ev := f.Event()
	k, ok := eventKey(ev)
	if !ok {
		return
	}
	if c.prior != nil {
		return // keep the first sighting: retries are judged against it
	}
	r := EventRecord{
		Method: f.Method(),
		First:  f.Time,
		Seq:    f.Seq,
	}
	if x != nil {
		r.RPCID = x.Key // IDKey of the request's id, computed once in begin
	} else {
		r.RPCID = IDKey(f.RPCID())
	}
	r.Type, _ = ev.Get("type").Text()
	r.SessionID, _ = ev.Path("session", "id").Text()
	r.CallID, _ = ev.Path("call", "id").Text()
	if x != nil && x.Deadline > 0 {
		r.DeadlineMs = x.Deadline.Milliseconds()
	}
	if ms, ok := c.events.(*MemoryStore); ok {
		ms.storeSum(k, r, ev.Sum()) // the digest stays 32 bytes, no hex
		return
	}
	r.Digest = ev.Digest()
	c.events.Store(k, r)
}

// addPending makes x the pending exchange of its id (a retry replaces the
// earlier one), and forgets the oldest pending exchanges past
// MaxPendingBytes.
func (c *Conversation) addPending(x *Exchange) {
	if old := c.pending[x.Key]; old != nil {
		c.pendingBytes -= old.cost
	}
	x.cost = pendingCost(x.Request)
	c.pending[x.Key] = x
	c.pendingBytes += x.cost
	c.order = append(c.order, x)
	// Answered entries leave the queue: from its head as they come, and
	// all at once when they outnumber the pending ones behind an old
	// request still unanswered. Kept, they held every exchange of a
	// long-running tap (1 GB in 10 minutes of an HTTP tap at 5,000
	// requests/s).
	for c.pendingHead < len(c.pendingQueue) && !c.IsPending(c.pendingQueue[c.pendingHead]) {
		c.pendingQueue[c.pendingHead] = nil
		c.pendingHead++
	}
	if live := len(c.pendingQueue) - c.pendingHead; live > 2*len(c.pending)+1024 {
		kept := c.pendingQueue[:0]
		for _, p := range c.pendingQueue[c.pendingHead:] {
			if p != nil && c.IsPending(p) {
				kept = append(kept, p)
			}
		}
		clear(c.pendingQueue[len(kept):])
		c.pendingQueue, c.pendingHead = kept, 0
	}
	if c.pendingHead > 1024 && c.pendingHead > len(c.pendingQueue)/2 {
		c.pendingQueue = append(c.pendingQueue[:0], c.pendingQueue[c.pendingHead:]...)
		clear(c.pendingQueue[len(c.pendingQueue):cap(c.pendingQueue)])
		c.pendingHead = 0
	}
	c.pendingQueue = append(c.pendingQueue, x)
	for c.pendingBytes > MaxPendingBytes && c.pendingHead < len(c.pendingQueue) {
		old := c.pendingQueue[c.pendingHead]
		c.pendingQueue[c.pendingHead] = nil
		c.pendingHead++
		if old == x || !c.IsPending(old) {
			if old == x {
				c.pendingQueue = append(c.pendingQueue, x) // never forget the newest
				break
			}
			continue
		}
		// Forgotten: its answer, should it come, is judged as one to a
		// request the tap could not read (not unsolicited), as for a
		// truncated request whose id was cut off.
		c.removePending(old)
		old.Outcome = OutcomeNotAudited
		c.blind++
		c.pendingForgotten++
	}
	c.forget()
}

// removePending ends x's time as the pending exchange of its id.
func (c *Conversation) removePending(x *Exchange) {
	if c.pending[x.Key] == x {
		delete(c.pending, x.Key)
		c.pendingBytes -= x.cost
	}
}

// PendingForgotten is how many unanswered requests the conversation
// forgot to stay within MaxPendingBytes.
func (c *Conversation) PendingForgotten() int { return c.pendingForgotten }

// forget drops the oldest answered exchanges beyond Config.KeepAnswered,
// and the requests no longer pending that were never answered (retried,
// or forgotten past MaxPendingBytes). It compacts order only when it has
// grown to twice what the last compaction kept (at least twice the
// bound), so the cost per frame stays constant however many requests are
// pending.
func (c *Conversation) forget() {
	if c.keep <= 0 || len(c.order) < max(2*c.keep, c.compactAt) {
		return
	}
	defer func() { c.compactAt = 2 * len(c.order) }()
	drop := len(c.answered) - c.keep
	kept := c.order[:0]
	for _, x := range c.order {
		if drop > 0 && x.Response != nil {
			if c.answered[x.Key] == x {
				delete(c.answered, x.Key)
			}
			drop--
			c.forgotten++
			c.forgottenIDs++
			continue
		}
		if x.Response == nil && c.pending[x.Key] != x {
			c.forgotten++
			c.forgottenIDs++
			continue // superseded by a retry with the same id
		}
		kept = append(kept, x)
	}
	clear(c.order[len(kept):]) // let the dropped exchanges be collected
	c.order = kept
}

// Forgotten is how many exchanges the conversation has dropped to stay
// within Config.KeepAnswered (answered ones, and requests superseded by a
// retry with the same id): Records no longer lists them.
func (c *Conversation) Forgotten() int { return c.forgotten }

// ForgottenExchanges is the part of Forgotten that dropped requests and
// their answers (not the standalone responses AddStandalone drops, whose
// ids Remembers never knew): what Remembers says of an id changes only
// when it grows, or when MaxPendingBytes forgets a pending request. A
// rule that keeps state per id re-checks it against Remembers when this
// grows; re-checking at every Forgotten change made a backend that
// answers ids never sent cost a pass over that state per frame.
func (c *Conversation) ForgottenExchanges() int { return c.forgottenIDs }

// AddStandalone records the exchange of a response judged without its
// request (a standalone file checked in an edit context), so that reports
// can show what was concluded about it. At most KeepAnswered are kept.
func (c *Conversation) AddStandalone(x *Exchange) {
	c.standalone = append(c.standalone, x)
	if c.keep > 0 && len(c.standalone) > c.keep {
		c.forgotten += len(c.standalone) - c.keep
		c.standalone = slices.Delete(c.standalone, 0, len(c.standalone)-c.keep)
	}
}

// An ExchangeRecord is what a report says of one exchange: who asked what,
// how it ended, and, for an intercept response, the edits a conforming
// harness applies (the effective value per target) or why it must reject
// the response.
type ExchangeRecord struct {
	Conn        string  `json:"conn,omitempty"`
	RPCID       string  `json:"rpcId,omitempty"`
	Method      string  `json:"method,omitempty"`
	EventType   string  `json:"eventType,omitempty"`
	EventID     string  `json:"eventId,omitempty"`
	RequestSeq  uint64  `json:"requestSeq,omitempty"`
	ResponseSeq uint64  `json:"responseSeq,omitempty"`
	Outcome     string  `json:"outcome,omitempty"`
	LatencyMs   float64 `json:"latencyMs,omitempty"`
	Edit        any     `json:"edit,omitempty"`
}

// Records returns a record of every exchange the conversation still holds
// (the most recent KeepAnswered answered ones, every pending one, and
// standalone responses), in frame order.
func (c *Conversation) Records() []ExchangeRecord {
	out := make([]ExchangeRecord, 0, len(c.order)+len(c.standalone))
	for _, x := range append(slices.Clip(c.order), c.standalone...) {
		r := ExchangeRecord{Method: x.Method, Outcome: x.Outcome, Edit: x.Edit}
		r.EventType, _ = x.Event.Get("type").Text()
		r.EventID, _ = x.Event.Get("id").Text()
		if f := x.Request; f != nil {
			r.Conn, r.RequestSeq, r.RPCID = f.Conn, f.Seq, x.RPCIDText()
		}
		if f := x.Response; f != nil {
			r.ResponseSeq = f.Seq
			if r.RPCID == "" {
				r.Conn, r.RPCID = f.Conn, IDText(f.RPCID())
			}
			if x.Request != nil && !f.Time.IsZero() && !x.Request.Time.IsZero() {
				r.LatencyMs = float64(f.Time.Sub(x.Request.Time).Microseconds()) / 1000
			}
		}
		out = append(out, r)
	}
	first := func(r ExchangeRecord) uint64 {
		if r.RequestSeq != 0 {
			return r.RequestSeq
		}
		return r.ResponseSeq
	}
	slices.SortStableFunc(out, func(a, b ExchangeRecord) int { return cmp.Compare(first(a), first(b)) })
	return out
}

// maxDeadlineMs is the longest timeoutMs a time.Duration holds.
const maxDeadlineMs = int64(math.MaxInt64 / int64(time.Millisecond))

// deadlineOf is the deadline a subscription's timeoutMs sets: 0 when it
// sets none (absent, not a positive integer). An integer too large for a
// time.Duration (2^64, 1e308: legal, issue 22) is the longest one.
func deadlineOf(ms *Value) time.Duration {
	if c, ok := ms.CompareInt(0); !ok || c <= 0 || !ms.IsInteger() {
		return 0
	}
	if c, _ := ms.CompareInt(maxDeadlineMs); c > 0 {
		return time.Duration(math.MaxInt64)
	}
	n, _ := ms.Int()
	return time.Duration(n) * time.Millisecond
}
