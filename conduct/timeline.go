// Package conduct judges how a harness dispatches events across every
// backend of one registration (issue 23): serial order, stop on deny,
// failure policy, observers after settlement, chained state, lineage and
// deny enforcement (the COND-* checks of rules.Catalogue). No single link
// can see these; a Timeline is fed the judged frames of every tapped link
// of the registration, each labelled with its hook id, in time order.
//
// The package does no I/O. Its input is what the links' tap.Sessions
// concluded (tap.Watcher): each frame with the exchange it opened or
// ended, the exchange's outcome and edit verdict included.
package conduct

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// DefaultSkew is the clock tolerance between links. The taps of one
// registration are separate processes on one host stamping frames with
// the same wall clock, but each stamps a frame when its goroutine reads
// it, after a scheduling delay that on a loaded host reaches a few
// milliseconds. Two facts from different links less than DefaultSkew
// apart are taken as simultaneous: they never make a finding.
const DefaultSkew = 5 * time.Millisecond

// DefaultMaxEvents bounds the events a Timeline holds at once; the oldest
// is judged and forgotten when a new one would exceed it.
const DefaultMaxEvents = 4096

// maxKnown bounds the event ids and call ids remembered for lineage
// (COND-8, COND-9).
const maxKnown = 100_000

// Config configures a Timeline.
type Config struct {
	// Registration is the registration document every link belongs to.
	Registration *tap.Value
	// Tapped lists the hook ids whose links feed the timeline. A chain
	// that needs a hook not listed is not judged (NotChecked says so).
	Tapped []string
	// Sink receives the findings (nil: discarded).
	Sink tap.Sink
	// Skew is the clock tolerance between links (0: DefaultSkew).
	Skew time.Duration
	// MaxEvents bounds the events held at once (0: DefaultMaxEvents).
	MaxEvents int
	// Excerpt says the timeline may not have seen the start of the
	// traffic (a live timeline that started after its links did): the
	// check that needs the absence of an earlier event (a tool.after
	// without a tool.before, COND-9) is not made.
	Excerpt bool
}

// lossWindow is how long after facts of a link were lost the events first
// seen are not judged: their earlier deliveries may be among the lost.
const lossWindow = 10 * time.Second

// A Timeline judges the conduct of a harness across the links of one
// registration. It is safe for concurrent use: the links may be fed from
// several goroutines (their frames must still arrive in time order, within
// the skew).
type Timeline struct {
	mu   sync.Mutex // guards everything below
	cfg  Config
	reg  *registration
	sink tap.Sink

	events map[tap.EventKey]*event
	order  []*event // by first sight, oldest first (may hold forgotten ones)

	known    map[string]knownEvent // by event id: lineage
	calls    map[string]*call      // by call id
	knownFIF []string              // event ids, oldest first, for eviction
	callFIF  []string
	turns    map[string]turnRecord // last turn.finish.before chain per turn id

	now       time.Time // the latest frame time seen
	judged    int       // events judged
	partial   int       // events not judged: a matching hook was not tapped
	partialBy map[string]bool
	chains    []Chain // most recent judged chains, for reports
	closed    bool
	lostUntil time.Time // events first seen before this are not judged (Lost)
	lostNext  bool      // Lost: extend lostUntil from the next frame's time
	lostN     int       // events not judged for lost facts
	// exercised holds the checks some judged event gave something to
	// judge (a claim counts a check only when it was exercised).
	exercised map[vocab.CheckID]bool
}

type knownEvent struct {
	source, typ, parent string
	denied              bool // a *.before whose chain denied it
}

type call struct {
	before, after string // event ids
	denied        bool
	// ran is a tool.after saying the call ran that came while its
	// tool.before was still unsettled on the time line (an intercept
	// outstanding: the harness gave up on it at its deadline, within the
	// clock tolerance, or the answer's stamp lags): judged as COND-8 when
	// the tool.before settles as denied, dropped otherwise.
	ran *ranAfter
}

// ranAfter is a tool.after whose COND-8 judgement waits for its
// tool.before to settle.
type ranAfter struct {
	ev      *event
	ref     frameRef
	outcome string
}

type turnRecord struct {
	event      string // the turn.finish.before event this is about
	remaining  int64
	has        bool
	resolution string // "continue", "stop" or ""
}

// New returns a Timeline for cfg.
func New(cfg Config) *Timeline {
	if cfg.Skew == 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = DefaultMaxEvents
	}
	t := &Timeline{cfg: cfg, reg: newRegistration(cfg.Registration, cfg.Tapped), sink: cfg.Sink,
		events: map[tap.EventKey]*event{}, known: map[string]knownEvent{}, calls: map[string]*call{},
		turns: map[string]turnRecord{}, partialBy: map[string]bool{}, exercised: map[vocab.CheckID]bool{}}
	if t.sink == nil {
		t.sink = tap.SinkFunc(func(tap.Finding) {})
	}
	return t
}

// Link returns the watcher of the link that taps hook: give it to that
// link's tap.SessionConfig.Watch.
func (t *Timeline) Link(hook string) tap.Watcher { return link{t, hook} }

type link struct {
	t    *Timeline
	hook string
}

func (l link) Judged(f *tap.Frame, x *tap.Exchange) { l.t.take(l.hook, f, x) }

// A delivery is one event sent to one backend.
type delivery struct {
	hook   *hook
	method string // hooks/intercept or hooks/observe
	ref    frameRef
	sent   time.Time
	retry  bool // a second intercept of the event to the same backend

	deadline time.Duration // 0: unknown
	policy   string        // the subscription's failurePolicy
	answered bool
	at       time.Time // when it was answered, or gave up at its deadline
	outcome  string
	accepted bool // a conforming harness applies the answer
	failed   bool // an operational failure
	ends     bool // an accepted deny or flow stop
	deny     bool
	flow     string // "stop", "continue" or ""

	// What the timeline keeps of the request and answer, rather than
	// their decoded values (an event held keeps no frame alive).
	state    reqState // params.state of the request
	input    string   // digest of event.tool.input of the request ("": none)
	effInput string   // digest of the effective input an accepted modify(input) produced ("": none)
	contrib  contribution
}

// reqState is what COND-5 needs of a request's params.state.
type reqState struct {
	ok         bool // params.state is an object
	permission string
	hasPerm    bool
	lists      map[string][]string // instructions, injections: each entry's digest
}

func stateOf(v *tap.Value) reqState {
	if !v.Is(tap.Object) {
		return reqState{}
	}
	st := reqState{ok: true, lists: map[string][]string{}}
	st.permission, st.hasPerm = v.Get("permission").Text()
	for _, name := range []string{"instructions", "injections"} {
		for _, e := range v.Get(name).Elems() {
			st.lists[name] = append(st.lists[name], e.Digest())
		}
	}
	return st
}

func digestOf(v *tap.Value) string {
	if v == nil {
		return ""
	}
	return v.Digest()
}

// contribution is what an accepted answer adds to the chained state.
type contribution struct {
	permission   string // deny, ask, allow or ""
	instructions []string
	injections   int
}

// frameRef is what a finding needs of a frame.
type frameRef struct {
	seq             uint64
	conn            string
	dir             tap.Direction
	time            time.Time
	rpcID           string
	eventID, evType string
}

func refOf(f *tap.Frame, evID, evType string) frameRef {
	return frameRef{seq: f.Seq, conn: f.Conn, dir: f.Dir, time: f.Time, rpcID: tap.IDText(f.RPCID()), eventID: evID, evType: evType}
}

// An event is one event's chain: every delivery of it.
type event struct {
	key        tap.EventKey
	typ        string
	first      time.Time
	deliveries []*delivery
	// interceptors are the hooks that subscribe to the event as
	// interceptors, in registration order; skip says why the chain is
	// not judged ("" when it is).
	interceptors []interceptor
	skip         string

	endAt  time.Time // when the chain ended (zero: it did not)
	endBy  *delivery
	endWhy string

	callID string // call.id of a tool event
	turn   string // turn.id of a turn.finish.before

	reported map[string]bool // rule IDs reported for this event
	gone     bool            // judged and forgotten

	failureNamed map[string]bool // backends a hook.failure named for this event (COND-11)
	claims       []failureClaim  // the hook.failure events naming this event, judged at finish
}

// failureClaim is what a hook.failure said of the event it names.
type failureClaim struct {
	ev              *event // the hook.failure event
	ref             frameRef
	backend, policy string
}

// take takes one frame a link judged.
func (t *Timeline) take(hookID string, f *tap.Frame, x *tap.Exchange) {
	if f == nil || f.Unchecked() || f.Msg == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	h := t.reg.byID[hookID]
	if h == nil {
		return
	}
	if f.Time.After(t.now) {
		t.now = f.Time
	}
	if t.lostNext {
		// The lost facts came before the next fact of their link: from
		// the first frame after the loss on, the window starts again.
		t.lostNext = false
		if until := f.Time.Add(lossWindow); until.After(t.lostUntil) {
			t.lostUntil = until
		}
	}
	switch m := f.Msg.(type) {
	case *tap.Request:
		if m.Method == "hooks/intercept" && x != nil {
			t.intercept(h, f, x)
		}
	case *tap.Notification:
		if m.Method == "hooks/observe" {
			t.observe(h, f)
		}
	case *tap.Response:
		if x != nil && x.Method == "hooks/intercept" { // x is set only for a response that matched
			if v, seen := harnessView(x); seen { // an injected fault: what the harness got, and when
				t.answer(h, f, answeredAt(f, x), v)
			}
		}
	}
}

// eventOf returns the chain of the event a frame carries, creating it.
func (t *Timeline) eventOf(ev *tap.Value, at time.Time) (*event, bool) {
	id, ok := ev.Get("id").Text()
	if !ok || id == "" {
		return nil, false
	}
	src, _ := ev.Get("source").Text()
	k := tap.EventKey{Source: src, ID: id}
	if e := t.events[k]; e != nil {
		return e, false
	}
	typ, _ := ev.Get("type").Text()
	e := &event{key: k, typ: typ, first: at, reported: map[string]bool{}}
	e.interceptors = t.reg.interceptors(typ)
	if miss := untapped(e.interceptors); len(miss) > 0 {
		e.skip = "hooks not tapped: " + strings.Join(miss, ", ")
		for _, m := range miss {
			t.partialBy[m] = true
		}
	}
	if e.skip == "" && !t.lostUntil.IsZero() && !at.After(t.lostUntil) {
		e.skip = "facts of a link were lost"
	}
	t.events[k] = e
	t.order = append(t.order, e)
	t.bound()
	return e, true
}

// bound judges and forgets the oldest events past MaxEvents.
func (t *Timeline) bound() {
	for len(t.events) > t.cfg.MaxEvents && len(t.order) > 0 {
		e := t.order[0]
		t.order = t.order[1:]
		if !e.gone {
			t.advance(e, t.now)
			t.finish(e)
		}
	}
	if len(t.order) > 2*t.cfg.MaxEvents {
		t.order = slices.DeleteFunc(t.order, func(e *event) bool { return e.gone })
	}
}

// advance ends, as of time now, every intercept of e still outstanding
// past its deadline: the harness gave up on it (AHP-FAIL-002), an
// operational failure under the subscription's policy.
func (t *Timeline) advance(e *event, now time.Time) {
	for _, d := range e.deliveries {
		if d.method != "hooks/intercept" || d.answered || d.deadline <= 0 {
			continue
		}
		if limit := d.sent.Add(d.deadline); now.After(limit.Add(t.cfg.Skew)) {
			d.answered, d.at, d.outcome, d.failed = true, limit, tap.OutcomeUnanswered, true
			t.settleFailure(e, d)
		}
	}
}

// settleFailure applies d's failure policy to the chain: fail-closed ends
// it (and denies).
func (t *Timeline) settleFailure(e *event, d *delivery) {
	if d.policy == "fail-closed" && e.endAt.IsZero() {
		e.endAt, e.endBy = d.at, d
		e.endWhy = fmt.Sprintf("a failure (%s) of %s's fail-closed subscription", d.outcome, d.hook.id)
		t.markDenied(e)
	}
}

// markDenied remembers that e, a *.before event, was denied (COND-8).
func (t *Timeline) markDenied(e *event) {
	k, ok := t.known[e.key.ID]
	if !ok {
		return
	}
	k.denied = true
	t.known[e.key.ID] = k
	t.exercised[vocab.Cond8] = true
	if c := t.calls[e.callID]; c != nil && e.typ == "tool.before" && c.before == e.key.ID {
		c.denied = true
		if p := c.ran; p != nil {
			c.ran = nil
			t.ranAfterDeny(p.ev, p.ref, e.callID, p.outcome, c.before)
		}
	}
}

// ranAfterDeny reports a tool.after that says a denied call ran (COND-8).
func (t *Timeline) ranAfterDeny(e *event, ref frameRef, callID, outcome, before string) {
	t.report(e, rules.CondDenyRan, ref, "/params/event/outcome",
		"tool.after for call %q has outcome %q, but its tool.before %q was denied: evidence the denied call ran (AHP-DEC-002)", callID, outcome, before)
}

// unsettled reports whether the event id of source is still held with an
// intercept outstanding.
func (t *Timeline) unsettled(source, id string) bool {
	e := t.events[tap.EventKey{Source: source, ID: id}]
	if e == nil || e.gone {
		return false
	}
	for _, d := range e.deliveries {
		if d.method == "hooks/intercept" && !d.answered {
			return true
		}
	}
	return false
}

// intercept takes a hooks/intercept request sent to h.
func (t *Timeline) intercept(h *hook, f *tap.Frame, x *tap.Exchange) {
	ev := x.Event
	e, fresh := t.eventOf(ev, f.Time)
	if e == nil {
		return
	}
	if fresh {
		t.lineage(e, ev, f)
	}
	t.advance(e, f.Time)
	d := &delivery{hook: h, method: "hooks/intercept", ref: refOf(f, e.key.ID, e.typ), sent: f.Time,
		deadline: x.Deadline, state: stateOf(f.Params().Get("state")), input: digestOf(ev.Path("tool", "input"))}
	d.policy, _ = x.Subscription.Get("failurePolicy").Text()
	var first *delivery
	for _, o := range e.deliveries {
		if o.method == "hooks/intercept" && o.hook == h {
			d.retry = true // BASE-6 judges retries (identity), COND-10 their deadline
			if first == nil {
				first = o
			}
		}
	}
	if fresh && e.typ == "turn.finish.before" {
		t.continuations(e, f)
	}
	if e.skip == "" && !d.retry {
		t.judgeIntercept(e, d, f)
		t.judgeGiveUp(e, d)
	}
	if d.retry {
		t.judgeRetry(e, first, d)
	}
	e.deliveries = append(e.deliveries, d)
}

// giveUpSlack is how long after an unanswered intercept's deadline the
// chain's next step may come (COND-10): a harness gives up at the deadline
// and applies the failure policy at once; a second is far more than
// scheduling takes, and far less than a harness that waits for the answer
// anyway.
const giveUpSlack = time.Second

// originalDeadline is when the first intercept of e to h's backend ran
// out (zero when its deadline is unknown): retries do not extend it
// (AHP-FAIL-002).
func originalDeadline(e *event, h *hook) time.Time {
	for _, o := range e.deliveries {
		if o.method == "hooks/intercept" && o.hook == h {
			if o.deadline <= 0 {
				return time.Time{}
			}
			return o.sent.Add(o.deadline)
		}
	}
	return time.Time{}
}

// judgeRetry judges a retry d of an intercept first sent as first
// (COND-10): it comes within the original deadline.
func (t *Timeline) judgeRetry(e *event, first, d *delivery) {
	limit := originalDeadline(e, d.hook)
	if limit.IsZero() || e.skip != "" {
		return
	}
	t.exercised[vocab.Cond10] = true
	if late := d.sent.Sub(limit); late > t.cfg.Skew {
		t.report(e, rules.CondRetryLate, d.ref, "",
			"%s received event %q again as hooks/intercept %v after the first delivery, %v past its %v deadline; a retry stays within the original deadline (AHP-FAIL-002)",
			d.hook.id, e.key.ID, d.sent.Sub(first.sent).Round(time.Millisecond), late.Round(time.Millisecond), first.deadline)
	}
}

// judgeGiveUp judges d, the next step of e's chain, when the step before
// it was an intercept whose answer the harness did not get by its
// deadline (COND-10): the harness gave up then, so d comes soon after.
func (t *Timeline) judgeGiveUp(e *event, d *delivery) {
	var prev *delivery
	for _, o := range e.deliveries {
		if o != d && !o.sent.After(d.sent) && (prev == nil || !o.sent.Before(prev.sent)) {
			prev = o
		}
	}
	if prev == nil || prev.method != "hooks/intercept" || prev.hook == d.hook {
		return
	}
	if prev.answered && prev.outcome != tap.OutcomeUnanswered && prev.outcome != tap.OutcomeLate {
		return // answered in time: not a deadline matter
	}
	limit := originalDeadline(e, prev.hook)
	if limit.IsZero() || d.sent.Before(limit) {
		return // before the deadline: an overlap, which COND-1 and COND-4 judge
	}
	t.exercised[vocab.Cond10] = true
	if late := d.sent.Sub(limit); late > giveUpSlack {
		t.report(e, rules.CondGaveUpLate, d.ref, "",
			"%s received event %q as %s %v after %s's deadline ran out with no answer the harness could take: a harness gives up at the deadline and applies the failure policy (%s) at once (AHP-FAIL-002)",
			d.hook.id, e.key.ID, d.method, late.Round(time.Millisecond), prev.hook.id, prev.policy)
	}
}

// judgeIntercept judges an intercept of e to a backend that had not had
// it: order (COND-1), stop (COND-2), observers (COND-4), state (COND-5).
func (t *Timeline) judgeIntercept(e *event, d *delivery, f *tap.Frame) {
	skew := t.cfg.Skew
	switch {
	case !e.endAt.IsZero() && d.sent.Sub(e.endAt) > skew:
		t.report(e, rules.CondAfterStop, d.ref, "",
			"%s (position %d in hooks) received event %q as hooks/intercept after %s ended the chain; no later interceptor receives the event (a best-effort hooks/observe is allowed)",
			d.hook.id, d.hook.pos+1, e.key.ID, e.endWhy)
	case !e.endAt.IsZero() && t.stoppedNear(e.endBy, d):
		t.reportStopNear(e, d)
	}
	var prev *delivery
	for _, o := range e.deliveries {
		if o.method == "hooks/intercept" && !o.retry && o.hook != d.hook {
			if o.hook.pos > d.hook.pos && d.sent.Sub(o.sent) > skew {
				t.report(e, rules.CondOrder, d.ref, "",
					"%s (position %d in hooks) received event %q after %s (position %d) had it at %s; interceptors run in the order of the registration's hooks array",
					d.hook.id, d.hook.pos+1, e.key.ID, o.hook.id, o.hook.pos+1, o.sent.Format(time.RFC3339Nano))
			}
			if prev == nil || o.sent.After(prev.sent) {
				prev = o
			}
		}
		if o.method == "hooks/observe" && d.sent.Sub(o.sent) > skew {
			t.report(e, rules.CondObserveEarly, o.ref, "",
				"%s received event %q as hooks/observe before the chain settled: %s (position %d) received it as hooks/intercept %v later; observers come after settlement",
				o.hook.id, e.key.ID, d.hook.id, d.hook.pos+1, d.sent.Sub(o.sent).Round(time.Millisecond))
		}
	}
	if prev != nil {
		t.chainedState(e, prev, d, f)
	}
}

// answer takes h's answer f to an intercept, which reached the harness at
// at (answeredAt).
func (t *Timeline) answer(h *hook, f *tap.Frame, at time.Time, x *tap.Exchange) {
	id, _ := x.Event.Get("id").Text()
	src, _ := x.Event.Get("source").Text()
	e := t.events[tap.EventKey{Source: src, ID: id}]
	if e == nil {
		return
	}
	var d *delivery
	for _, o := range e.deliveries {
		if o.method == "hooks/intercept" && o.hook == h && (!o.answered || o.outcome == tap.OutcomeUnanswered) {
			d = o
			break
		}
	}
	if d == nil {
		return
	}
	gaveUp := d.answered // advance already ended it at its deadline
	d.answered, d.outcome = true, x.Outcome
	if !gaveUp {
		d.at = at
	}
	res, hasEdit := x.Edit.(rules.EditResult)
	switch x.Outcome {
	case tap.OutcomeNoEffect, tap.OutcomeEffects, tap.OutcomeDeny:
		d.accepted = !hasEdit || res.Accepted
	}
	if !d.accepted {
		d.failed = true
		if x.Outcome == tap.OutcomeLate && d.deadline > 0 {
			d.at = d.sent.Add(d.deadline) // the harness gave up at the deadline
		}
	}
	if d.accepted {
		d.contrib, d.flow, d.deny = contributionOf(f)
		d.ends = d.deny || d.flow == "stop"
		if hasEdit {
			d.ends = res.Ends
			d.effInput = digestOf(res.Effective["input"])
		}
	}
	if e.skip == "" && !d.retry {
		t.judgeOverlap(e, d)
	}
	if e.turn != "" {
		t.resolveTurn(e, d)
	}
	switch {
	case d.failed && !gaveUp:
		t.settleFailure(e, d)
	case d.ends && e.endAt.IsZero():
		e.endAt, e.endBy = d.at, d
		what := "an accepted flow stop"
		if d.deny {
			what = "an accepted deny"
			t.markDenied(e)
		}
		e.endWhy = what + " from " + d.hook.id
	}
	if e.endBy == d && e.skip == "" && !d.retry {
		// Intercepts to later interceptors already on the time line,
		// sent within the clock tolerance of this end.
		for _, o := range e.deliveries {
			if o.method == "hooks/intercept" && !o.retry && o.hook != d.hook && d.at.Sub(o.sent) <= t.cfg.Skew && t.stoppedNear(d, o) {
				t.reportStopNear(e, o)
			}
		}
	}
}

// stoppedNear reports whether o, an intercept sent within the clock
// tolerance of the end of the chain by s's answer (a deny, a flow stop, a
// fail-closed error), is a fault all the same. A conforming harness calls
// the hooks after s's in the registration's order only once s has
// answered, and after a stop never: an intercept to one of them that was
// not sent clearly before s's own (COND-1/order says that) is either
// out of order, outstanding alongside s's (COND-1) or after the stop
// (COND-2), however the clocks differ. That holds when the harness took
// s's answer: it came more than the tolerance before s's deadline (a
// harness that gave up on it first, under fail-open, rightly goes on),
// and neither is a retry. So a harness that goes on at once after a deny
// is seen however fast it and the next backend are.
func (t *Timeline) stoppedNear(s, o *delivery) bool {
	skew := t.cfg.Skew
	return s != nil && o != s && !s.retry && !o.retry && o.hook.pos > s.hook.pos && !o.sent.Before(s.sent.Add(-skew)) &&
		(s.deadline <= 0 || s.at.Before(s.sent.Add(s.deadline-skew)))
}

// reportStopNear reports o, an intercept stoppedNear the end of e's chain.
func (t *Timeline) reportStopNear(e *event, o *delivery) {
	t.report(e, rules.CondAfterStop, o.ref, "",
		"%s (position %d in hooks) received event %q as hooks/intercept within the clock tolerance of %s ending the chain, not before that interceptor had the event: whatever the clocks, it came alongside that intercept or after the stop; no later interceptor receives the event (a best-effort hooks/observe is allowed)",
		o.hook.id, o.hook.pos+1, e.key.ID, e.endWhy)
}

// judgeOverlap judges, once d is answered, every intercept of e to another
// backend sent while d was outstanding (COND-1), and every observe sent
// before d settled (COND-4).
func (t *Timeline) judgeOverlap(e *event, d *delivery) {
	skew := t.cfg.Skew
	for _, o := range e.deliveries {
		if o == d || o.hook == d.hook || o.sent.Before(d.sent) {
			continue
		}
		switch {
		case o.method == "hooks/intercept" && !o.retry && d.at.Sub(o.sent) > skew:
			t.report(e, rules.CondConcurrent, o.ref, "",
				"%s received event %q as hooks/intercept while %s still had it outstanding (answered %v later); interceptors run one at a time, never concurrently",
				o.hook.id, e.key.ID, d.hook.id, d.at.Sub(o.sent).Round(time.Millisecond))
		case o.method == "hooks/observe" && d.at.Sub(o.sent) > skew:
			t.report(e, rules.CondObserveEarly, o.ref, "",
				"%s received event %q as hooks/observe while %s still had it as hooks/intercept (answered %v later); observers come after settlement",
				o.hook.id, e.key.ID, d.hook.id, d.at.Sub(o.sent).Round(time.Millisecond))
		}
	}
}

// observe takes a hooks/observe notification to h.
func (t *Timeline) observe(h *hook, f *tap.Frame) {
	ev := f.Event()
	e, fresh := t.eventOf(ev, f.Time)
	if e == nil {
		return
	}
	if fresh {
		t.lineage(e, ev, f)
		if e.typ == "hook.failure" {
			t.hookFailure(e, ev, f)
		}
	}
	t.advance(e, f.Time)
	d := &delivery{hook: h, method: "hooks/observe", ref: refOf(f, e.key.ID, e.typ), sent: f.Time, answered: true, at: f.Time}
	called := false
	for _, o := range e.deliveries {
		if o.method == "hooks/intercept" && o.hook == h {
			called = true
		}
	}
	if called && !h.observes(e.typ) && e.skip == "" {
		t.report(e, rules.CondSecondCopy, d.ref, "",
			"%s received event %q as hooks/observe after it was called with it as hooks/intercept, and has no observe subscription for %s; only uncalled intercept subscriptions get the short-circuit observe",
			h.id, e.key.ID, e.typ)
	}
	if e.skip == "" {
		t.judgeGiveUp(e, d)
	}
	// An intercept still outstanding is judged when it is answered
	// (judgeOverlap); a later intercept, when it arrives (judgeIntercept).
	e.deliveries = append(e.deliveries, d)
}

// hookFailure judges a hook.failure event e, on its first sight, against
// the chain of the event it names (COND-11): the backend it names failed
// for that event, under the policy it names.
func (t *Timeline) hookFailure(e *event, ev *tap.Value, f *tap.Frame) {
	parent, _ := ev.Get("parentEventId").Text()
	backend, _ := ev.Path("failure", "backendId").Text()
	policy, _ := ev.Path("failure", "policy").Text()
	p := t.events[tap.EventKey{Source: e.key.Source, ID: parent}]
	if p == nil || p.gone || p.skip != "" {
		return // not held: not judged
	}
	t.exercised[vocab.Cond11] = true
	if p.failureNamed == nil {
		p.failureNamed = map[string]bool{}
	}
	p.failureNamed[backend] = true
	// Judged when p is: the failure it names may reach the time line
	// after the report of it (an answer ahp-tap injected reaches the
	// harness before the backend's own, which the link audits).
	p.claims = append(p.claims, failureClaim{ev: e, ref: refOf(f, e.key.ID, e.typ), backend: backend, policy: policy})
}

// judgeClaims judges the hook.failure events naming e, once e's chain is
// complete (COND-11).
func (t *Timeline) judgeClaims(e *event) {
	for _, c := range e.claims {
		var got *delivery
		for _, d := range e.deliveries {
			if d.method == "hooks/intercept" && d.hook.id == c.backend && !d.retry {
				got = d
				break
			}
		}
		switch {
		case got == nil:
			t.report(c.ev, rules.CondFailureNames, c.ref, "/params/event/failure/backendId",
				"hook.failure names backend %q for event %q, which that backend never received as hooks/intercept; a hook.failure names the interceptor that failed", c.backend, e.key.ID)
		case !got.failed:
			t.report(c.ev, rules.CondFailureNames, c.ref, "/params/event/failure/backendId",
				"hook.failure names backend %q for event %q, but its hooks/intercept did not fail (%s); a hook.failure reports an operational failure", c.backend, e.key.ID, got.outcome)
		case got.policy != "" && c.policy != got.policy:
			t.report(c.ev, rules.CondFailureNames, c.ref, "/params/event/failure/policy",
				"hook.failure for %q's failure on event %q names policy %q, but that subscription's failurePolicy is %q: the policy it names is the one applied (AHP-FAIL-001)", c.backend, e.key.ID, c.policy, got.policy)
		}
	}
	e.claims = nil
}

// contributionOf reads what an accepted intercept result adds to the
// chained state, and its flow and deny effects.
func contributionOf(f *tap.Frame) (c contribution, flow string, deny bool) {
	m, ok := f.Msg.(*tap.Response)
	if !ok {
		return
	}
	for _, eff := range m.Result.Get("effects").Elems() {
		typ, _ := eff.Get("type").Text()
		switch typ {
		case "deny", "ask", "allow":
			c.permission = stickier(c.permission, typ)
			deny = deny || typ == "deny"
		case "flow":
			op, _ := eff.Get("operation").Text()
			switch {
			case op == "stop":
				flow = "stop"
			case op == "continue" && flow != "stop":
				flow = "continue"
				if s, ok := eff.Get("instruction").Text(); ok {
					c.instructions = append(c.instructions, s)
				}
			}
		case "inject":
			c.injections++
		}
	}
	return
}

// permissionRank orders permissions: deny over ask over allow over none.
var permissionRank = map[string]int{"": 0, "none": 0, "allow": 1, "ask": 2, "deny": 3}

func stickier(a, b string) string {
	if permissionRank[b] > permissionRank[a] {
		return b
	}
	return a
}

// chainedState judges d's request state and tool input against the
// previous interceptor's request and answer (COND-5).
func (t *Timeline) chainedState(e *event, prev, d *delivery, f *tap.Frame) {
	if !prev.answered {
		return // concurrent: COND-1 says so
	}
	if prev.state.ok && d.state.ok {
		was := prev.state.permission
		want := was
		if prev.accepted {
			want = stickier(was, prev.contrib.permission)
		}
		if got, ok := d.state.permission, d.state.hasPerm; ok && permissionRank[got] != permissionRank[want] {
			t.report(e, rules.CondPermission, d.ref, "/params/state/permission",
				"state.permission sent to %s is %q, but the chain so far decided %q (%s had %q and answered %s); permission is sticky: deny over ask over allow over none, and a failed answer contributes nothing",
				d.hook.id, got, want, prev.hook.id, was, describeAnswer(prev))
		}
		for _, acc := range []struct {
			name string
			add  int
			list []string
		}{{"instructions", len(prev.contrib.instructions), prev.contrib.instructions}, {"injections", prev.contrib.injections, nil}} {
			before := prev.state.lists[acc.name]
			after := d.state.lists[acc.name]
			want := len(before)
			if prev.accepted {
				want += acc.add
			}
			bad := len(after) != want
			for i := 0; !bad && i < len(before); i++ {
				bad = before[i] != after[i]
			}
			if bad {
				t.report(e, rules.CondAccumulate, d.ref, "/params/state/"+acc.name,
					"state.%s sent to %s has %d entries, want %d: the %d %s had, kept in order, plus what its answer (%s) added; a failed or rejected answer adds nothing",
					acc.name, d.hook.id, len(after), want, len(before), prev.hook.id, describeAnswer(prev))
			}
		}
	}
	if prev.accepted && prev.effInput != "" && d.input != "" && prev.effInput != d.input {
		t.report(e, rules.CondInput, d.ref, "/params/event/tool/input",
			"the tool input sent to %s is not the effective input after %s's accepted modify(input); each later interceptor sees the accepted effective content",
			d.hook.id, prev.hook.id)
	}
}

func describeAnswer(d *delivery) string {
	switch {
	case d.failed:
		return "with a failure (" + d.outcome + ")"
	case d.contrib.permission != "":
		return d.contrib.permission
	}
	return d.outcome
}

// continuations judges remainingContinuations of a turn.finish.before
// against the turn's previous one (COND-7), and remembers this one.
func (t *Timeline) continuations(e *event, f *tap.Frame) {
	turn, ok := f.Event().Path("turn", "id").Text()
	if !ok {
		return
	}
	rem, has := f.Params().Path("capabilities", "flow", "remainingContinuations").Int()
	prev, seen := t.turns[turn]
	if seen && prev.has && has && prev.resolution != "" {
		t.exercised[vocab.Cond7] = true
	}
	if seen && prev.has && has {
		want := prev.remaining
		if prev.resolution == "continue" {
			want--
		}
		if prev.resolution != "" && rem != want {
			t.report(e, rules.CondContinuation, refOf(f, e.key.ID, e.typ), "/params/capabilities/flow/remainingContinuations",
				"remainingContinuations is %d in turn %q's next turn.finish.before, want %d: the previous chain resolved to %s with %d remaining (a continue costs exactly one, a stop none)",
				rem, turn, want, prev.resolution, prev.remaining)
		}
	}
	// The resolution is known once the chain settles: finish fills it.
	if len(t.turns) > maxKnown {
		clear(t.turns)
	}
	e.turn = turn
	t.turns[turn] = turnRecord{event: e.key.ID, remaining: rem, has: has}
}

// lineage judges the first sight of an event against the events seen
// before (COND-8, COND-9), and remembers it.
func (t *Timeline) lineage(e *event, ev *tap.Value, f *tap.Frame) {
	ref := refOf(f, e.key.ID, e.typ)
	parent, hasParent := ev.Get("parentEventId").Text()
	callID, hasCall := ev.Path("call", "id").Text()
	if hasParent {
		p, known := t.known[parent]
		_, isCall := t.calls[parent]
		switch {
		case parent == e.key.ID:
			t.report(e, rules.CondParent, ref, "/params/event/parentEventId", "event %q names itself as its parent; lineage forms no cycle", e.key.ID)
		case !known && isCall:
			t.report(e, rules.CondParent, ref, "/params/event/parentEventId", "parentEventId %q is a call id, not an event id; a parent is an event", parent)
		case known && p.source != e.key.Source:
			t.report(e, rules.CondParent, ref, "/params/event/parentEventId", "parentEventId %q names an event of source %q, not this event's source %q", parent, p.source, e.key.Source)
		case known && e.typ == "user.elicitation.result" && p.typ != "user.elicitation.request":
			t.report(e, rules.CondParent, ref, "/params/event/parentEventId", "the parent of a user.elicitation.result is its user.elicitation.request, not a %s", p.typ)
		case known && t.cycle(parent, e.key.ID):
			t.report(e, rules.CondParent, ref, "/params/event/parentEventId", "parentEventId %q leads back to event %q; lineage forms no cycle", parent, e.key.ID)
		}
		if known && p.denied && strings.HasSuffix(e.typ, ".after") && afterOf(p.typ) == e.typ && e.typ != "tool.after" {
			t.report(e, rules.CondDenyRan, ref, "/params/event/parentEventId",
				"a %s follows the denied %s %q: evidence the denied operation ran (AHP-DEC-002: after an accepted deny the operation does not run)", e.typ, p.typ, parent)
		}
	}
	if hasCall {
		e.callID = callID
	}
	if hasParent || (hasCall && e.typ == "tool.after") {
		t.exercised[vocab.Cond9] = true
	}
	if hasCall && e.typ == "tool.before" {
		c := t.rememberCall(callID)
		switch first, known := t.known[c.before]; {
		case c.before == "":
			c.before = e.key.ID
		case c.before != e.key.ID && (!known || first.source == e.key.Source):
			t.report(e, rules.CondSecondBefore, ref, "/params/event/id",
				"a second tool.before (event %q) for call %q, which already had tool.before %q: a retry keeps the event id (AHP-CORE-004), and a call gets one tool.before", e.key.ID, callID, c.before)
		}
	}
	if hasCall && e.typ == "tool.after" {
		c := t.calls[callID]
		outcome, _ := ev.Get("outcome").Text()
		switch {
		case c == nil && !t.cfg.Excerpt && t.toolBeforeCovered():
			t.report(e, rules.CondAfterUnknown, ref, "/params/event/call/id",
				"tool.after for call %q, but no tool.before with that call.id was dispatched to the tapped backends, which subscribe to every tool.before", callID)
		case c != nil && c.after != "" && c.after != e.key.ID:
			t.report(e, rules.CondSecondAfter, ref, "/params/event/call/id", "a second tool.after (event %q) for call %q, which already had tool.after %q; each call gets one tool.after", e.key.ID, callID, c.after)
		}
		switch {
		case c != nil && c.denied && outcome != "denied":
			t.ranAfterDeny(e, ref, callID, outcome, c.before)
		case c != nil && outcome != "denied" && t.unsettled(e.key.Source, c.before):
			// The harness settled the tool.before before sending this
			// (a fail-closed deadline it gave up at, within the clock
			// tolerance, is not on the time line yet): judge when the
			// time line settles it.
			c.ran = &ranAfter{ev: e, ref: ref, outcome: outcome}
		}
		if c == nil {
			c = t.rememberCall(callID)
		}
		if c.after == "" {
			c.after = e.key.ID
		}
	}
	t.remember(e.key.ID, knownEvent{source: e.key.Source, typ: e.typ, parent: parent})
}

// afterOf names the after event of a before event ("tool.before" →
// "tool.after"; "config.change.before" → "config.change.after").
func afterOf(before string) string {
	if s, ok := strings.CutSuffix(before, ".before"); ok {
		return s + ".after"
	}
	return ""
}

// cycle reports whether following parents from parent reaches id.
func (t *Timeline) cycle(parent, id string) bool {
	for range 64 {
		p, ok := t.known[parent]
		if !ok || p.parent == "" {
			return false
		}
		if p.parent == id {
			return true
		}
		parent = p.parent
	}
	return false
}

// toolBeforeCovered reports whether every tool.before reaches a tapped
// backend: a tapped hook subscribes to it without filters, and no hook
// of the registration is untapped.
func (t *Timeline) toolBeforeCovered() bool {
	covered := false
	for _, h := range t.reg.hooks {
		if !h.tapped {
			return false
		}
		for _, mode := range []string{"intercept", "observe"} {
			if s := tap.MatchSubscription(h.entry, "tool.before", mode); s != nil && !s.Has("filters") {
				covered = true
			}
		}
	}
	return covered
}

func (t *Timeline) remember(id string, k knownEvent) {
	if _, ok := t.known[id]; !ok {
		t.knownFIF = append(t.knownFIF, id)
		if len(t.knownFIF) > maxKnown {
			delete(t.known, t.knownFIF[0])
			t.knownFIF = t.knownFIF[1:]
		}
	}
	t.known[id] = k
}

func (t *Timeline) rememberCall(id string) *call {
	c := t.calls[id]
	if c == nil {
		c = &call{}
		t.calls[id] = c
		t.callFIF = append(t.callFIF, id)
		if len(t.callFIF) > maxKnown {
			delete(t.calls, t.callFIF[0])
			t.callFIF = t.callFIF[1:]
		}
	}
	return c
}

// finish judges what needs the whole chain (COND-3), records the chain,
// and forgets the event.
func (t *Timeline) finish(e *event) {
	e.gone = true
	delete(t.events, e.key)
	if e.skip == "facts of a link were lost" {
		t.lostN++
		return
	}
	if e.skip != "" {
		t.partial++
		return
	}
	t.judged++
	t.exercise(e)
	var failOpen *delivery
	called := map[*hook]bool{}
	for _, d := range e.deliveries {
		if d.method != "hooks/intercept" {
			continue
		}
		called[d.hook] = true
		if d.failed && d.policy == "fail-open" && failOpen == nil {
			failOpen = d
		}
	}
	t.judgeClaims(e)
	t.failureUnreported(e)
	if failOpen != nil && e.endAt.IsZero() {
		for _, i := range e.interceptors {
			if i.hook.pos > failOpen.hook.pos && !i.filtered && !called[i.hook] {
				t.report(e, rules.CondFailOpen, failOpen.ref, "",
					"after %s's fail-open subscription failed (%s), the chain did not go on to %s (position %d), which subscribes to %s: fail-open continues with the next interceptor (unless the harness was interrupted, which the wire does not show)",
					failOpen.hook.id, failOpen.outcome, i.hook.id, i.hook.pos+1, e.typ)
				break
			}
		}
	}
	t.chains = append(t.chains, chainOf(e))
	if len(t.chains) > maxChains {
		t.chains = t.chains[len(t.chains)-maxChains:]
	}
}

// failureUnreported notes, as information, each operational failure of an
// intercept of e that no hook.failure named while a tapped hook observes
// hook.failure (COND-11; AHP allows it).
func (t *Timeline) failureUnreported(e *event) {
	observed := slices.ContainsFunc(t.reg.hooks, func(h *hook) bool { return h.tapped && h.observes("hook.failure") })
	if !observed {
		return
	}
	for _, d := range e.deliveries {
		if d.method != "hooks/intercept" || d.retry || !d.failed {
			continue
		}
		t.exercised[vocab.Cond11] = true
		if !e.failureNamed[d.hook.id] {
			t.report(e, rules.CondFailureNone, d.ref, "",
				"%s's hooks/intercept of event %q failed (%s, %s) and no hook.failure named it, though a tapped hook observes hook.failure; AHP lets a harness report the failure so (information only)",
				d.hook.id, e.key.ID, d.outcome, d.policy)
			return
		}
	}
}

// exercise notes which checks e gave something to judge.
func (t *Timeline) exercise(e *event) {
	var intercepts, observes, stated int
	for _, d := range e.deliveries {
		switch {
		case d.method == "hooks/observe":
			observes++
		case !d.retry:
			intercepts++
			if d.state.ok {
				stated++
			}
		}
	}
	if intercepts == 0 {
		return
	}
	later := func(pos int) bool {
		return slices.ContainsFunc(e.interceptors, func(i interceptor) bool { return i.hook.pos > pos })
	}
	if len(e.interceptors) >= 2 {
		t.exercised[vocab.Cond1] = true
	}
	if e.endBy != nil && later(e.endBy.hook.pos) {
		t.exercised[vocab.Cond2], t.exercised[vocab.Cond6] = true, true
	}
	for _, d := range e.deliveries {
		if d.method == "hooks/intercept" && d.failed && d.policy == "fail-open" && later(d.hook.pos) {
			t.exercised[vocab.Cond3] = true
		}
	}
	if observes > 0 {
		t.exercised[vocab.Cond4] = true
	}
	if stated >= 2 {
		t.exercised[vocab.Cond5] = true
	}
}

// conductNeeds says, per check, what traffic exercises it.
var conductNeeds = map[vocab.CheckID]string{
	vocab.Cond1:  "no event matched two or more interceptors",
	vocab.Cond2:  "no chain was ended (deny, flow stop, fail-closed failure) before a later interceptor",
	vocab.Cond3:  "no fail-open failure before a later interceptor",
	vocab.Cond4:  "no hooks/observe of an intercepted event",
	vocab.Cond5:  "no two interceptors of one event both received params.state",
	vocab.Cond6:  "no chain was short-circuited before a later interceptor",
	vocab.Cond7:  "no turn had two judged turn.finish.before events",
	vocab.Cond8:  "no *.before event was denied",
	vocab.Cond9:  "no tool.after or parentEventId",
	vocab.Cond10: "no intercept went unanswered past its deadline before a next step or a retry",
	vocab.Cond11: "no intercept failed while a tapped hook observes hook.failure, and no hook.failure named a held event",
}

// Exercised says, per conduct check, why the judged events did not
// exercise it ("" when they did).
func (t *Timeline) Exercised() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]string{}
	for c, why := range conductNeeds {
		if t.exercised[c] {
			why = ""
		}
		out[string(c)] = why
	}
	return out
}

// resolveTurn records how an accepted answer d resolves e, a
// turn.finish.before, for COND-7: stop beats continue.
func (t *Timeline) resolveTurn(e *event, d *delivery) {
	r, ok := t.turns[e.turn]
	if !ok || r.event != e.key.ID || !d.accepted {
		return
	}
	switch {
	case d.flow == "stop":
		r.resolution = "stop"
	case d.flow == "continue" && r.resolution == "":
		r.resolution = "continue"
	}
	t.turns[e.turn] = r
}

// report writes one finding under ri about ref, at most once per event
// and rule.
func (t *Timeline) report(e *event, ri tap.RuleInfo, ref frameRef, ptr, format string, args ...any) {
	if e.reported[ri.ID] {
		return
	}
	e.reported[ri.ID] = true
	t.sink.Write(tap.Finding{Check: string(ri.Check), Requirement: ri.Requirement, Rule: ri.ID, Level: ri.Level,
		Message: fmt.Sprintf(format, args...), Pointer: ptr, Seq: ref.seq, Dir: ref.dir, Conn: ref.conn, Time: ref.time,
		RPCID: ref.rpcID, EventID: ref.eventID, EventType: ref.evType, Binds: tap.FromHarness})
}

// Close judges every event still held. Findings after Close are dropped.
func (t *Timeline) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	for _, e := range t.order {
		if !e.gone {
			t.advance(e, e.lastTime().Add(24*time.Hour))
			t.finish(e)
		}
	}
	t.order = nil
	t.closed = true
}

func (e *event) lastTime() time.Time {
	last := e.first
	for _, d := range e.deliveries {
		if d.sent.After(last) {
			last = d.sent
		}
	}
	return last
}

// Lost says facts of a link were lost on their way to the timeline
// (live conduct: the queue to the timeline's process was full). Events held
// now and those first seen within 10 s are not judged, lest a missing
// delivery look like a fault; nor, from now on, is a tool.after without a
// tool.before.
func (t *Timeline) Lost() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.events {
		if e.skip == "" {
			e.skip = "facts of a link were lost"
		}
	}
	t.lostUntil = t.now.Add(lossWindow)
	t.lostNext = true
	t.cfg.Excerpt = true
}

// NotChecked says which conduct checks some events could not get, and why.
func (t *Timeline) NotChecked() []tap.NotChecked {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []tap.NotChecked
	if t.lostN > 0 {
		reason := fmt.Sprintf("%d events were not judged: facts of a link were lost on their way to the conduct timeline", t.lostN)
		for _, c := range []vocab.CheckID{vocab.Cond1, vocab.Cond2, vocab.Cond3, vocab.Cond4, vocab.Cond5} {
			out = append(out, tap.NotChecked{Check: string(c), Reason: reason})
		}
	}
	if t.partial == 0 {
		return out
	}
	var miss []string
	for id := range t.partialBy {
		miss = append(miss, id)
	}
	slices.Sort(miss)
	reason := fmt.Sprintf("%d of %d events had a matching intercept subscription on a hook that is not tapped (%s)",
		t.partial, t.partial+t.judged, strings.Join(miss, ", "))
	for _, c := range []vocab.CheckID{vocab.Cond1, vocab.Cond2, vocab.Cond3, vocab.Cond4, vocab.Cond5} {
		out = append(out, tap.NotChecked{Check: string(c), Reason: reason})
	}
	return out
}
