package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"fmt"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// retryRule checks BASE-6 (AHP-CORE-004, §7): a harness preserves event
// identity across retries. A second delivery of an event (same source and
// event.id) by the same method is a retry: it carries identical event
// content, the same JSON-RPC id, session id and call id; it does not follow
// an explicit deny or a successful empty-effect response; it comes within
// the first delivery's deadline. Different content under one (source, id)
// means two different events share an identity.
//
// It judges only against the EventRecord of the first sighting, so it works
// the same when a per_event harness starts one tap per event and the taps
// share an EventStore. An observe and an intercept of one event are
// different deliveries (short-circuit observation may even carry the
// settled, modified event), never a retry. When the selected hook has two
// subscriptions of one mode covering the event, a second delivery may be the
// other subscription's (legitimate, §7), so only the identity fields are
// compared.
type retryRule struct{ info tap.RuleInfo }

func retryRules() []tap.Rule {
	return []tap.Rule{retryRule{info("BASE-6/retry", vocab.Base6,
		"retries reuse the event's content, JSON-RPC id, session and call ids, within the deadline, never after deny or no effect")}}
}

func (r retryRule) Info() tap.RuleInfo { return r.info }

// Requires says BASE-6 reads the outcomes of earlier deliveries, which
// outcomeAnalysis records (through the conversation, into the EventStore).
func (r retryRule) Requires() []*tap.Analysis { return []*tap.Analysis{outcomeAnalysis} }

func (r retryRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	prior := c.PriorEvent()
	if prior == nil {
		return nil
	}
	method := f.Method()
	ev := f.Event()
	evType, _ := ev.Get("type").Text()
	// Name the first sighting by frame number and time: with a shared
	// EventStore it may have been seen by another tap process.
	first := fmt.Sprintf("#%d", prior.Seq)
	if !prior.First.IsZero() {
		first += ", " + prior.First.UTC().Format("15:04:05.000Z")
	}
	if evType != prior.Type {
		return []tap.Finding{r.info.At(f, 0, "/params/event/type", "event (source, id) was first seen (%s) as a %s event and is now a %s event: two different events must not share one (source, id)", first, quoted(prior.Type), quoted(evType))}
	}
	if prior.Method != method {
		return nil // a different delivery of the same event, not a retry
	}
	mode := "observe"
	if method == methodIntercept {
		mode = "intercept"
	}
	shared := c.Hook != nil && matchingSubscriptions(c.Hook, evType, mode) > 1
	var out []tap.Finding

	// Identity fields first: these never differ between deliveries of one event.
	var diff []string
	if s, _ := ev.Path("session", "id").Text(); s != prior.SessionID {
		diff = append(diff, "session.id "+quoted(s)+" (was "+quoted(prior.SessionID)+")")
	}
	if s, _ := ev.Path("call", "id").Text(); s != prior.CallID {
		diff = append(diff, "call.id "+quoted(s)+" (was "+quoted(prior.CallID)+")")
	}
	switch {
	case len(diff) > 0:
		out = append(out, r.info.At(f, 0, "/params/event", "re-sent event (first seen %s) changed its %s; a retry keeps the session and call ids", first, strings.Join(diff, " and ")))
	case !shared && ev.Digest() != prior.Digest:
		out = append(out, r.info.At(f, 0, "/params/event", "re-sent event (first seen %s) has different content; a retry carries the identical event, and a different event needs its own id", first))
	}
	if method != methodIntercept {
		return out // observer transports may re-send the same payload (§7)
	}
	if id := tap.IDKey(f.RPCID()); prior.RPCID != "" && id != prior.RPCID {
		out = append(out, r.info.At(f, 0, "/id", "retry of the event first sent (%s) uses JSON-RPC id %s; a retry reuses the original id", first, tap.IDText(f.RPCID())))
	}
	if shared {
		return out
	}
	switch prior.Outcome {
	case tap.OutcomeDeny:
		out = append(out, r.info.At(f, 0, "", "event re-sent after the backend denied it explicitly (delivery %s); a harness must not retry after a deny", first))
	case tap.OutcomeNoEffect:
		out = append(out, r.info.At(f, 0, "", "event re-sent after a successful response with no effects (to delivery %s); a harness must not retry after an empty-effect response", first))
	}
	if prior.DeadlineMs > 0 && !prior.First.IsZero() && !f.Time.IsZero() {
		deadline := time.Duration(prior.DeadlineMs) * time.Millisecond
		if since := f.Time.Sub(prior.First); since > deadline {
			out = append(out, r.info.At(f, 0, "", "retry sent %v after the first delivery (%s), past the original %v deadline; retries stay within the original deadline", since.Round(time.Millisecond), first, deadline))
		}
	}
	return out
}

// matchingSubscriptions counts the subscriptions of hook in mode whose
// events cover eventType.
func matchingSubscriptions(hook *tap.Value, eventType, mode string) int {
	n := 0
	for _, s := range hook.Get("subscriptions").Elems() {
		if m, _ := s.Get("mode").Text(); m != mode {
			continue
		}
		for _, e := range s.Get("events").Elems() {
			if p, ok := e.Text(); ok && tap.EventPatternMatches(p, eventType) {
				n++
				break
			}
		}
	}
	return n
}
