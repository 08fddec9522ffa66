package rules

import (
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
	return []tap.Rule{authorityRule{info("BASE-9/authority", "BASE-9",
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
		ps = append(ps, problem{check: "BASE-9", ptr: ptr, msg: fmt.Sprintf(format, args...)})
	}
	caps := x.Capabilities
	advertised := textSet(caps.Get("effects"))
	evType, _ := x.Event.Get("type").Text()
	b, boundaryKnown := boundaries[evType]
	allowed := b.effects
	for i, e := range result.Get("effects").Elems() {
		t, ok := e.Get("type").Text()
		if !ok {
			continue // EFF-1
		}
		ptr := tap.Ptr("/result/effects", i)
		if !coreEffectNames[t] {
			continue // EFF-1 judges every type outside the eight core ones
		}
		if !advertised[t] {
			add(ptr+"/type", "effect %s was not advertised in the request's capabilities.effects (%s); a backend may return only advertised effects", quoted(t), advertisedText(caps.Get("effects")))
		}
		if boundaryKnown && !slices.Contains(allowed, t) {
			add(ptr+"/type", "effect %s is not allowed at %s (allowed there: %v)", quoted(t), evType, allowed)
		}
		switch t {
		case "flow":
			op, ok := e.Get("operation").Text()
			if !ok || (op != "stop" && op != "continue") {
				continue // EFF-1 reports missing or undefined operations
			}
			if !textSet(caps.Path("flow", "operations"))[op] {
				add(ptr+"/operation", "flow operation %s was not advertised in capabilities.flow.operations (%s)", quoted(op), advertisedText(caps.Path("flow", "operations")))
			}
			if op != "continue" {
				continue
			}
			if boundaryKnown && !continueAllowed[evType] {
				add(ptr+"/operation", "flow continue is allowed only at turn.finish.before and tool.after, not at %s", evType)
			}
			if rc := caps.Path("flow", "remainingContinuations"); rc.IsInteger() && rc.Sign() <= 0 {
				add(ptr+"/operation", "flow continue returned with capabilities.flow.remainingContinuations %s; continue needs an allowance left", rc.Str)
			}
		case "inject":
			at, ok := e.Get("deliverAt").Text()
			if !ok || (at != "now" && at != "next_turn") {
				continue // EFF-1
			}
			if !textSet(caps.Path("inject", "context", "deliverAt"))[at] {
				add(ptr+"/deliverAt", "inject deliverAt %s was not advertised in capabilities.inject.context.deliverAt (%s)", quoted(at), advertisedText(caps.Path("inject", "context", "deliverAt")))
			}
		}
	}
	return ps
}

// textSet returns the string elements of an array value as a set.
func textSet(v *tap.Value) map[string]bool {
	s := make(map[string]bool)
	for _, e := range v.Elems() {
		if t, ok := e.Text(); ok {
			s[t] = true
		}
	}
	return s
}

// advertisedText renders an advertised list for a message.
func advertisedText(v *tap.Value) string {
	if v == nil {
		return "the request advertised none"
	}
	return "advertised: " + show(v)
}
