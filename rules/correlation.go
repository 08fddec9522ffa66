package rules

import (
	"encoding/json"
	"fmt"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/vocab"

	"strconv"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// correlationRules returns the correlation checks. How an exchange ends
// (its outcome) is an analysis the engine computes before any rule runs,
// so no rule's order matters.
func correlationRules() []tap.Rule {
	return []tap.Rule{
		idEqualsEventRule{info("CORR-1/id-event", vocab.Corr1,
			"the JSON-RPC id of hooks/intercept equals params.event.id")},
		answeredOnceRule{info("CORR-2/answered-once", vocab.Corr2,
			"every request is answered exactly once; no response for an unknown or already answered id")},
		lateRule{warnInfo("CORR-3/late", vocab.Corr3,
			"an intercept not answered within the subscription's timeoutMs (or --timeout): answered late, or given up by the harness at the deadline")},
		portableIDRule{warnInfo("CORR-2/portable-id", vocab.Corr2,
			"a request id that JavaScript and some SDK decoders do not preserve (an integer above 2^53-1, or written as a non-integer number)")},
	}
}

// outcomeAnalysis records on the Exchange how a matched response ends it,
// in the AHP Inspector's words: an empty effect list is no_effect (not
// "allow"), an accepted deny is explicit_deny, a response after the
// deadline is late whatever it says. BASE-6 reads the outcome of an
// event's earlier delivery from the EventStore, where the conversation
// copies it. Its result says whether the outcome is late (CORR-3 reads it):
// a bool, where the outcome string would cost an allocation per response
// to put in an interface.
var outcomeAnalysis = &tap.Analysis{Name: "outcome", Run: func(c *tap.Conversation, f *tap.Frame) any {
	m, ok := f.Msg.(*tap.Response)
	x := c.Exchange()
	if !ok || x == nil || c.Correlation() != tap.Matched {
		return false
	}
	_, late := pastDeadline(x, f.Time)
	if late {
		x.Outcome = tap.OutcomeLate
	} else {
		x.Outcome = judgeOutcome(c, x, m)
	}
	return late
}}

// judgeOutcome classifies a response to x. A result the harness must reject
// (wrong version, no effects list, an effect that is not an object of a
// defined or advertised extension type, an unadvertised or out-of-place
// effect) is invalid_response: an operational failure, even when it holds a
// deny (§4.6).
func judgeOutcome(c *tap.Conversation, x *tap.Exchange, m *tap.Response) string {
	switch {
	case m.Error != nil && m.Result == nil:
		return tap.OutcomeErrorAnswer
	case m.Error != nil || !m.Result.Is(tap.Object):
		return tap.OutcomeInvalid
	case x.Method != methodIntercept:
		return "" // a discovery or unknown-method answer decides nothing
	}
	res := m.Result
	if v, _ := res.Get("protocolVersion").Text(); v != c.Snapshot {
		return tap.OutcomeInvalid
	}
	effects := res.Get("effects")
	if !effects.Is(tap.Array) || res.Has("manifest") {
		return tap.OutcomeInvalid
	}
	if len(authorityProblems(x, res)) > 0 {
		return tap.OutcomeInvalid
	}
	deny := false
	advertised := newTextSet(x.Capabilities.Get("effects"))
	for _, e := range effects.Elems() {
		t, ok := e.Get("type").Text()
		if !ok || (!coreEffectNames[t] && !(reverseDNSName.MatchString(t) && advertised.has(t))) {
			// AHP-CORE-003, AHP-CAP-001: an unknown or unadvertised effect
			// type rejects the whole response.
			return tap.OutcomeInvalid
		}
		deny = deny || t == "deny"
	}
	switch {
	case len(effects.Elems()) == 0:
		return tap.OutcomeNoEffect
	case deny:
		return tap.OutcomeDeny
	}
	return tap.OutcomeEffects
}

// idEqualsEventRule checks CORR-1 (AHP-CORE-004): the JSON-RPC id of
// hooks/intercept is the string params.event.id (§2.4).
type idEqualsEventRule struct{ info tap.RuleInfo }

func (r idEqualsEventRule) Info() tap.RuleInfo { return r.info }

func (r idEqualsEventRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	m, ok := f.Msg.(*tap.Request)
	if !ok || m.Method != methodIntercept {
		return nil
	}
	evID, ok := f.Event().Get("id").Text()
	if !ok {
		return nil // EVT-1 reports a missing or non-string event id
	}
	if id, ok := m.ID.Text(); ok && id == evID {
		return nil
	}
	return []tap.Finding{r.info.At(f, 0, "/id", "hooks/intercept id is %s but params.event.id is %s; the JSON-RPC id must be the same string", show(m.ID), quoted(evID))}
}

// answeredOnceRule checks CORR-2 (AHP-RPC-001): every request is answered
// exactly once with its id. It says nothing in a standalone excerpt
// (c.Partial), where the other half of an exchange is not expected.
type answeredOnceRule struct{ info tap.RuleInfo }

func (r answeredOnceRule) Info() tap.RuleInfo { return r.info }

// answeredOnceState remembers the exchanges already reported unanswered
// when their backend's stream ended, so Finish does not report them twice,
// and how many requests and answers each id has had: a retry re-sends a
// request with the same id (AHP-CORE-004), and each copy may be answered.
//
// The counts are read only for a Duplicate response, one whose id the
// conversation still remembers as answered, so they live as long as the
// conversation remembers the id (tap.Conversation.Remembers): once it
// forgets the exchange (Config.KeepAnswered), a later response with that
// id is Unsolicited whatever the counts say, and a later request with it
// starts them again. sweep drops the rest, so the state holds at most the
// ids of the pending and remembered exchanges (plus those seen since the
// last sweep) however long the conversation runs: keeping every id held
// ~60 bytes per request for ever (19 MB after 170,000 requests of a
// replay, bench/reports.sh).
type answeredOnceState struct {
	reported map[*tap.Exchange]bool
	sent     map[string]int // requests per IDKey
	answers  map[string]int // responses per IDKey
	// forgotten is c.ForgottenExchanges() at the last sweep, and limit
	// the size of sent+answers that triggers one without it.
	forgotten int
	limit     int
	sweeps    int // how many sweeps ran (tests)
}

// minSweepLimit is the smallest size of the per-id counts that triggers a
// sweep when the conversation forgot nothing (unsolicited answers and
// answers to unreadable requests count ids it never remembers).
const minSweepLimit = 4096

func (r answeredOnceRule) state(c *tap.Conversation) *answeredOnceState {
	return c.RuleState(r.info.ID, func() any {
		return &answeredOnceState{
			reported: make(map[*tap.Exchange]bool),
			sent:     make(map[string]int),
			answers:  make(map[string]int),
			limit:    minSweepLimit,
		}
	}).(*answeredOnceState)
}

// sweep drops the counts of the ids the conversation no longer remembers
// and the reported exchanges no longer pending, each time the
// conversation has forgotten exchanges since the last sweep (so an id's
// counts end with its last exchange, at the same frame in a live run and
// its replay) or the counts have doubled. It runs before the frame being
// checked is counted, so the cost is a few map operations per frame.
func (st *answeredOnceState) sweep(c *tap.Conversation) {
	if c.ForgottenExchanges() == st.forgotten && len(st.sent)+len(st.answers) < st.limit {
		return
	}
	st.sweeps++
	st.forgotten = c.ForgottenExchanges()
	for k := range st.sent {
		if !c.Remembers(k) {
			delete(st.sent, k)
		}
	}
	for k := range st.answers {
		if !c.Remembers(k) {
			delete(st.answers, k)
		}
	}
	for x := range st.reported {
		if !c.IsPending(x) {
			delete(st.reported, x) // Note and Finish look only at pending exchanges
		}
	}
	st.limit = max(minSweepLimit, 2*(len(st.sent)+len(st.answers)))
}

func (r answeredOnceRule) Requires() []*tap.Analysis { return []*tap.Analysis{answersAnalysis} }

func (r answeredOnceRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if c.Partial {
		return nil
	}
	st := r.state(c)
	st.sweep(c)
	if req, ok := f.Msg.(*tap.Request); ok {
		if x := c.Exchange(); x != nil && x.Request == f {
			st.sent[x.Key]++ // the conversation's IDKey of req.ID
		} else {
			st.sent[tap.IDKey(req.ID)]++
		}
		return nil
	}
	if x := c.Exchange(); f.Truncated && x != nil && x.Request == f {
		st.sent[x.Key]++ // a request read from its prefix: its copies may each be answered
		return nil
	}
	m, ok := f.Msg.(*tap.Response)
	if !ok || m.ID == nil {
		return nil // BASE-1 reports a response without id
	}
	key := ""
	if x := c.Exchange(); x != nil && x.Response == nil && c.Correlation() == tap.Matched {
		key = x.Key // the pending exchange it answers has this id's key
	} else {
		key = tap.IDKey(m.ID)
	}
	switch c.Correlation() {
	case tap.Duplicate:
		st.answers[key]++
		if st.answers[key] <= st.sent[key] {
			return nil // the answer to the other copy of a retried request
		}
		prev := c.Answered(key)
		return []tap.Finding{r.info.At(f, 0, "/id", "response id %s answers a request that was already answered (#%d); every request is answered exactly once", tap.IDText(m.ID), prev.Response.Seq)}
	case tap.Unsolicited:
		// It answers no request, so it does not count against any: a
		// request with this id sent later may still be answered once.
		if a := answersOf(c); a.notification || a.malformed {
			return nil // BASE-7 reports answers to notifications; a null-id error answers an unparseable message
		}
		return []tap.Finding{r.info.At(f, 0, "/id", "response id %s matches no request that was sent; a response must carry the id of a pending request", tap.IDText(m.ID))}
	}
	st.answers[key]++
	return nil
}

// Note reports the requests still pending when the backend's side of their
// connection ended: its stdout closed, its process exited, or it could not
// be reached. Nothing can answer them any more. A request whose deadline
// had already run out is CORR-3's (lateRule), not "never answered". An
// HTTP response without a JSON-RPC message (a 401, 403, 500...) answers
// its request at the HTTP layer: HTTP-2 judges it, and the request is no
// longer pending.
func (r answeredOnceRule) Note(c *tap.Conversation, n tap.Note) []tap.Finding {
	if c.Partial {
		return nil
	}
	var why string
	switch {
	case n.Kind == tap.NoteHTTPResponse:
		for _, x := range c.Pending() {
			if x.Request.Conn == n.Conn {
				c.Settle(x, tap.OutcomeFailure)
			}
		}
		return nil
	case n.Kind == tap.NoteInjected && n.Fault == string(inject.Crash):
		// The tap killed the backend on purpose (--inject crash, issue
		// 25): the request it did so for is nobody's fault.
		for _, x := range c.Pending() {
			if x.Request.Conn == n.Conn && sameID(x.RPCIDText(), n.ID) {
				c.Settle(x, tap.OutcomeInjected)
			}
		}
		return nil
	case n.Kind == tap.NoteEOF && n.Dir == tap.FromBackend:
		why = "the backend closed its output"
	case n.Kind == tap.NoteExit:
		why = "the backend process exited"
	case n.Kind == tap.NoteUpstreamFailure:
		why = "the backend could not be reached"
	case n.Kind == tap.NoteHarnessGone:
		why = "the harness closed the connection first"
	case n.Kind == tap.NoteKilled:
		why = "the harness killed the tap's process group first"
	default:
		return nil
	}
	st := r.state(c)
	var out []tap.Finding
	for _, x := range c.Pending() {
		if st.reported[x] || !sameLink(c, x, n) {
			continue
		}
		if _, late := lateAt(c, x, n); late && n.Kind != tap.NoteUpstreamFailure {
			st.reported[x] = true // CORR-3: the deadline ran out first (and not at Finish either)
			continue
		}
		st.reported[x] = true
		lvl, outcome := tap.Error, tap.OutcomeUnanswered
		switch {
		case x.MaybeAnswered:
			out = append(out, maybeAnswered(r.info, x))
			continue
		}
		switch n.Kind {
		case tap.NoteUpstreamFailure:
			// An operational failure of the link, not a backend that kept
			// quiet: a fact the reader needs, not a protocol violation.
			lvl, outcome = tap.Warn, tap.OutcomeFailure
		case tap.NoteHarnessGone, tap.NoteKilled:
			// The harness gave up (its deadline, or it was stopped): no
			// one broke the protocol, but a reader should know.
			lvl, outcome = tap.Info, tap.OutcomeAbandoned
		}
		x.Outcome = outcome
		fd := r.info.At(x.Request, lvl, "/id", "request id %s was never answered: %s", x.RPCIDText(), why)
		if n.Kind != tap.NoteHarnessGone {
			fd.Binds = tap.FromBackend // the harness's frame, the backend's duty
		}
		out = append(out, fd)
	}
	return out
}

// sameID reports whether two JSON-RPC ids, as JSON text, are the same id
// (a string and a number never are).
func sameID(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	switch x.(type) {
	case string:
		return x == y
	case float64: // never coerced: 1 and 1.0 are two ids
		_, isNum := y.(float64)
		return isNum && strings.TrimSpace(a) == strings.TrimSpace(b)
	}
	return false
}

// sameLink reports whether note n ends the link request x travelled on:
// its connection, or, for a killed tap, every connection of a stdio
// conversation (one process).
func sameLink(c *tap.Conversation, x *tap.Exchange, n tap.Note) bool {
	return x.Request.Conn == n.Conn || (n.Kind == tap.NoteKilled && c.Transport == tap.Stdio)
}

// Finish reports every request still unanswered at the end of the stream
// (unless its deadline had run out: CORR-3).
func (r answeredOnceRule) Finish(c *tap.Conversation) []tap.Finding {
	if c.Partial {
		return nil
	}
	st := r.state(c)
	var out []tap.Finding
	for _, x := range c.Pending() {
		if st.reported[x] {
			continue
		}
		if _, late := pastDeadline(x, c.LastTime()); late {
			continue // CORR-3's
		}
		if x.MaybeAnswered {
			out = append(out, maybeAnswered(r.info, x))
			continue
		}
		x.Outcome = tap.OutcomeUnanswered
		fd := r.info.At(x.Request, 0, "/id", "request id %s was never answered before the stream ended", x.RPCIDText())
		fd.Binds = tap.FromBackend // the harness's frame, the backend's duty
		out = append(out, fd)
	}
	return out
}

// maybeAnswered is the info finding for a request no answer the tap could
// read matched, while a backend frame audited only as a prefix (whose id
// was cut off) may have been that answer: the tap cannot tell, so it does
// not call it unanswered.
func maybeAnswered(info tap.RuleInfo, x *tap.Exchange) tap.Finding {
	x.Outcome = tap.OutcomeNotAudited
	return info.At(x.Request, tap.Info, "/id", "request id %s got no answer ahp-tap could read; a backend frame it audited only as a truncated prefix may have been that answer (not judged)", x.RPCIDText())
}

// lateRule checks CORR-3 (AHP-FAIL-002) the same way on every transport:
// an intercept that is not answered within its deadline (the
// subscription's timeoutMs, else --timeout) is one finding, whether the
// answer came late or the harness gave up at the deadline (closed the
// connection, killed the backend) before any answer came. Who broke what
// decides the level: answering within the deadline is the backend's
// SHOULD (warn); enforcing it (ignoring a late answer, applying the
// failure policy) binds the harness, which the wire cannot show. Latency
// is the difference of the two frames' (or the frame's and the note's)
// times.
type lateRule struct{ info tap.RuleInfo }

func (r lateRule) Info() tap.RuleInfo { return r.info }

// pastDeadline reports how long after its request t is, and whether that
// is past the deadline of x, an intercept with a known deadline.
func pastDeadline(x *tap.Exchange, t time.Time) (time.Duration, bool) {
	if x.Method != methodIntercept || x.Deadline <= 0 || t.IsZero() || x.Request.Time.IsZero() {
		return 0, false // AHP-FAIL-002 bounds interception; discovery has no deadline
	}
	took := t.Sub(x.Request.Time)
	return took, took > x.Deadline
}

// giveUp reports whether n is the harness giving up on its pending
// requests (it closed the connection, or killed the tap's process group).
func giveUp(n tap.Note) bool {
	return n.Kind == tap.NoteHarnessGone || n.Kind == tap.NoteKilled
}

// lateAt is pastDeadline at note n. A harness that gives up measures its
// deadline from its own send, which may precede the tap's read of the
// request: the first request of a stdio tap waits in the pipe while the
// tap starts (issue 21 item 9). So for a give-up the deadline runs from
// the earliest the harness may have sent the request
// (Conversation.EarliestSend): a harness that kills the tap's process
// group at its deadline is judged as one that gave up at the deadline
// (CORR-3) whether or not the group it killed held the tap.
func lateAt(c *tap.Conversation, x *tap.Exchange, n tap.Note) (time.Duration, bool) {
	if !giveUp(n) {
		return pastDeadline(x, n.Time)
	}
	took, late := pastDeadline(x, n.Time)
	if from := c.EarliestSend(x); !late && from.Before(x.Request.Time) {
		if d, ok := pastDeadline(x, n.Time.Add(x.Request.Time.Sub(from))); ok {
			return d, true
		}
	}
	return took, late
}

// lateState remembers the pending exchanges already reported expired.
type lateState struct{ reported map[*tap.Exchange]bool }

// prune drops the exchanges answered since they were reported (a late
// answer after the link ended): they are pending no more.
func (st *lateState) prune(c *tap.Conversation) {
	for x := range st.reported {
		if !c.IsPending(x) {
			delete(st.reported, x)
		}
	}
}

func (r lateRule) state(c *tap.Conversation) *lateState {
	return c.RuleState(r.info.ID, func() any { return &lateState{reported: map[*tap.Exchange]bool{}} }).(*lateState)
}

// deadlineWords is what every CORR-3 finding says of who broke what.
const deadlineWords = "the backend SHOULD answer within the deadline; AHP-FAIL-002 binds the harness to stop waiting at the deadline, ignore any later answer and apply its failure policy"

func (r lateRule) Requires() []*tap.Analysis { return []*tap.Analysis{outcomeAnalysis} }

func (r lateRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if late, _ := c.Result(outcomeAnalysis).(bool); !late {
		return nil
	}
	x := c.Exchange()
	if st := r.state(c); st.reported[x] {
		// Reported when its deadline passed (a NoteDeadline): the late
		// answer is the same fact, reported once (issue 21 item 8).
		delete(st.reported, x)
		return nil
	}
	took, _ := pastDeadline(x, f.Time)
	// Not marked reported: this answer ends x, and Note and Finish look
	// only at pending exchanges (marking it kept every late exchange for
	// the whole conversation).
	fd := r.info.At(f, tap.Warn, "", "hooks/intercept %s was answered %v after the request, past its %v deadline: %s", tap.IDText(x.Request.RPCID()), took.Round(time.Millisecond), x.Deadline, deadlineWords)
	fd.EventID, _ = x.Event.Get("id").Text()
	return []tap.Finding{fd}
}

// Note reports the intercepts still unanswered past their deadline when
// their link ended: the harness gave up (closed the connection, killed the
// process group) or the backend went away after the deadline.
func (r lateRule) Note(c *tap.Conversation, n tap.Note) []tap.Finding {
	if c.Partial {
		return nil
	}
	var how string
	switch {
	case n.Kind == tap.NoteDeadline:
		// The live tap's clock passed these deadlines with no answer
		// audited: reported now, not when the stream ends; a later answer
		// is the same fact (Check).
		var out []tap.Finding
		for _, x := range c.Due() {
			out = append(out, r.expired(c, x, n.Time, "")...)
		}
		return out
	case n.Kind == tap.NoteHarnessGone:
		how = "the harness closed the connection"
	case n.Kind == tap.NoteKilled:
		how = "the harness killed the tap's process group"
	case n.Kind == tap.NoteExit:
		how = "the backend process ended"
	case n.Kind == tap.NoteEOF && n.Dir == tap.FromBackend:
		how = "the backend closed its output"
	default:
		return nil
	}
	r.state(c).prune(c)
	var out []tap.Finding
	for _, x := range c.Pending() {
		if !sameLink(c, x, n) {
			continue
		}
		since, late := lateAt(c, x, n)
		if !late && giveUp(n) {
			// Given up before its deadline: the harness's choice (CORR-2
			// info), and the tap stops waiting with it (forward mode
			// cancels the upstream request). The deadline passing later,
			// by the live clock or the stream, is no backend's fault.
			r.state(c).reported[x] = true
			continue
		}
		if late && giveUp(n) {
			if took, byRead := pastDeadline(x, n.Time); !byRead {
				// Late by the harness's clock, not yet by the tap's read
				// of the request (it waited while the tap started): say so.
				out = append(out, r.expiredAt(c, x, n.Time, took, fmt.Sprintf("%s %v after the tap started, the request waiting to be read, and", how, since.Round(time.Millisecond)))...)
				continue
			}
		}
		out = append(out, r.expired(c, x, n.Time, how)...)
	}
	return out
}

// Finish reports the intercepts still unanswered past their deadline when
// the stream ended.
func (r lateRule) Finish(c *tap.Conversation) []tap.Finding {
	if c.Partial {
		return nil
	}
	var out []tap.Finding
	for _, x := range c.Pending() {
		out = append(out, r.expired(c, x, c.LastTime(), "the stream ended")...)
	}
	return out
}

func (r lateRule) expired(c *tap.Conversation, x *tap.Exchange, t time.Time, how string) []tap.Finding {
	took, late := pastDeadline(x, t)
	if !late {
		return nil
	}
	return r.expiredAt(c, x, t, took, how)
}

// expiredAt reports x, unanswered took after its request by t (once).
func (r lateRule) expiredAt(c *tap.Conversation, x *tap.Exchange, t time.Time, took time.Duration, how string) []tap.Finding {
	st := r.state(c)
	if st.reported[x] {
		return nil
	}
	st.reported[x] = true
	x.Outcome = tap.OutcomeLate
	var fd tap.Finding
	if how == "" { // at the deadline (NoteDeadline): no elapsed time, which
		// differs by the clock's grain between a live tap and its replay
		fd = r.info.At(x.Request, tap.Warn, "", "hooks/intercept %s was not answered within its %v deadline (an answer after this is late): %s", tap.IDText(x.Request.RPCID()), x.Deadline, deadlineWords)
	} else {
		fd = r.info.At(x.Request, tap.Warn, "", "hooks/intercept %s was not answered within its %v deadline (%s %v after the request, with no answer): %s", tap.IDText(x.Request.RPCID()), x.Deadline, how, took.Round(time.Millisecond), deadlineWords)
	}
	fd.Time = t
	fd.Binds = tap.FromBackend // the harness's frame, the backend's SHOULD
	return []tap.Finding{fd}
}

// portableIDRule warns under CORR-2 about a request id that is legal
// JSON-RPC but does not survive other implementations: an integer beyond
// ±(2^53−1), which JavaScript numbers and many SDKs' decoders round, or an
// integer written as a non-integer number (1.0, 1e3), which they re-encode
// differently. Either may come back in the response as another id, and
// ahp-tap pairs ids exactly as written (never coerced), so the answer
// would match no request. An id BASE-1 already rejects (1.5) is BASE-1's.
type portableIDRule struct{ info tap.RuleInfo }

func (r portableIDRule) Info() tap.RuleInfo { return r.info }

func (r portableIDRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	m, ok := f.Msg.(*tap.Request)
	if !ok || !m.ID.Is(tap.Number) || !validID(m.ID) {
		return nil
	}
	lit := m.ID.Str
	if strings.ContainsAny(lit, ".eE") {
		as := "another literal"
		if n, fits := m.ID.Int(); fits {
			as = strconv.FormatInt(n, 10)
		}
		return []tap.Finding{r.info.At(f, 0, "/id", "request id %s is written as a non-integer number; JavaScript and many SDK decoders re-encode it as %s, so the response may carry another id (ids are paired exactly as written)", lit, as)}
	}
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil && n <= maxSafeInteger && n >= -maxSafeInteger {
		return nil
	}
	return []tap.Finding{r.info.At(f, 0, "/id", "request id %s is beyond 2^53-1 (9007199254740991); JavaScript numbers and some SDK decoders do not preserve it, so the response may carry another id (ids are paired exactly as written)", lit)}
}

// maxSafeInteger is 2^53−1, the largest integer every IEEE 754 double
// (a JavaScript number) holds exactly.
const maxSafeInteger = 1<<53 - 1
