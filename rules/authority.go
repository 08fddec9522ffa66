package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"fmt"
	"slices"

	"github.com/ahp-tap/ahp-tap/tap"
)

// authorityRule checks BASE-9 (AHP-SEC-001, AHP-CAP-001, AHP-DEC-001): no
// successful intercept result claims more authority than the request gave.
// Every returned effect type was advertised in that request's
// capabilities.effects and is allowed at the event (§4.3); flow operations
// were advertised in capabilities.flow.operations, continue only while
// remainingContinuations > 0; inject deliverAt was advertised in
// capabilities.inject.context.deliverAt.
//
// Not here: modify targets and operations (EDIT-6), effect types outside
// the eight core ones, extension effects included, and effect shapes
// (EFF-1), the request's own advertisement (CAP-1).
type authorityRule struct{ info tap.RuleInfo }

func authorityRules() []tap.Rule {
	return []tap.Rule{authorityRule{info("BASE-9/authority", vocab.Base9,
		"every returned effect, flow operation and deliverAt was advertised and is allowed at the event")}}
}

func (r authorityRule) Info() tap.RuleInfo { return r.info }

func (r authorityRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	m, ok := f.Msg.(*tap.Response)
	x := c.Exchange()
	if !ok || m.Error != nil || x == nil || x.Method != methodIntercept || c.Correlation() != tap.Matched {
		return nil
	}
	var out []tap.Finding
	for _, p := range authorityProblems(x, m.Result) {
		out = append(out, r.info.At(f, 0, p.ptr, "%s", p.msg))
	}
	return out
}

// authorityProblems judges the effects of an intercept result against the
// request of exchange x. The outcome rule (correlation.go) uses it too.
func authorityProblems(x *tap.Exchange, result *tap.Value) []problem {
	var ps []problem
	add := func(ptr, format string, args ...any) {
		ps = append(ps, problem{check: vocab.Base9, ptr: ptr, msg: fmt.Sprintf(format, args...)})
	}
	caps := x.Capabilities
	advertised := newTextSet(caps.Get("effects"))
	evType, _ := x.Event.Get("type").Text()
	b, boundaryKnown := boundaries[evType]
	allowed := b.Effects
	for i, e := range result.Get("effects").Elems() {
		t, ok := e.Get("type").Text()
		if !ok {
			continue // EFF-1
		}
		if !coreEffectNames[t] {
			continue // EFF-1 judges every type outside the eight core ones
		}
		if !advertised.has(t) {
			add(tap.Ptr("/result/effects", i, "type"), "effect %s was not advertised in the request's capabilities.effects (%s); a backend may return only advertised effects", quoted(t), advertisedText(caps.Get("effects")))
		}
		if boundaryKnown && !slices.Contains(allowed, t) {
			add(tap.Ptr("/result/effects", i, "type"), "effect %s is not allowed at %s (allowed there: %v)", quoted(t), evType, allowed)
		}
		switch t {
		case "flow":
			op, ok := e.Get("operation").Text()
			if !ok || (op != "stop" && op != "continue") {
				continue // EFF-1 reports missing or undefined operations
			}
			if !newTextSet(caps.Path("flow", "operations")).has(op) {
				add(tap.Ptr("/result/effects", i, "operation"), "flow operation %s was not advertised in capabilities.flow.operations (%s)", quoted(op), advertisedText(caps.Path("flow", "operations")))
			}
			if op != "continue" {
				continue
			}
			if boundaryKnown && !continueAllowed[evType] {
				add(tap.Ptr("/result/effects", i, "operation"), "flow continue is allowed only at turn.finish.before and tool.after, not at %s", evType)
			}
			if rc := caps.Path("flow", "remainingContinuations"); rc.IsInteger() && rc.Sign() <= 0 {
				add(tap.Ptr("/result/effects", i, "operation"), "flow continue returned with capabilities.flow.remainingContinuations %s; continue needs an allowance left", rc.Str)
			}
		case "inject":
			at, ok := e.Get("deliverAt").Text()
			if !ok || (at != "now" && at != "next_turn") {
				continue // EFF-1
			}
			if !newTextSet(caps.Path("inject", "context", "deliverAt")).has(at) {
				add(tap.Ptr("/result/effects", i, "deliverAt"), "inject deliverAt %s was not advertised in capabilities.inject.context.deliverAt (%s)", quoted(at), advertisedText(caps.Path("inject", "context", "deliverAt")))
			}
		}
	}
	return ps
}

// A textSet is the set of the string elements of an array value. Lookups
// scan a short array (a capability list names a few effects or
// operations: no map to allocate, for every response) and use a map for a
// long one, so that checking each effect of a hostile response against a
// hostile list stays linear in the size of the two.
type textSet struct {
	list *tap.Value
	m    map[string]bool
}

// textSetScanMax is the longest array a textSet scans rather than indexes.
const textSetScanMax = 16

func newTextSet(v *tap.Value) textSet {
	es := v.Elems()
	if len(es) <= textSetScanMax {
		return textSet{list: v}
	}
	m := make(map[string]bool, len(es))
	for _, e := range es {
		if t, ok := e.Text(); ok {
			m[t] = true
		}
	}
	return textSet{m: m}
}

// has reports whether s is one of the set's strings.
func (ts textSet) has(s string) bool {
	if ts.m != nil {
		return ts.m[s]
	}
	return listsString(ts.list, s)
}

// advertisedText renders an advertised list for a message.
func advertisedText(v *tap.Value) string {
	if v == nil {
		return "the request advertised none"
	}
	return "advertised: " + show(v)
}
