package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"fmt"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// EFF-1 (AHP-DEC-001, AHP-CORE-003): a hooks/intercept success result
// carries an ordered "effects" array, and every member is a closed object of
// a defined type with its required fields (§4.1). One invalid member
// rejects the whole response, a valid deny included (§4.6): the response is
// reported once, naming every effect it takes down, besides the specific
// problems.
//
// Not EFF-1: whether an effect was advertised or is allowed at the
// boundary (BASE-9), modify value shapes per target (EDIT-4), reverse-DNS
// naming of deny.code (BASE-4), protocolVersion (BASE-2).

func effectRules() []tap.Rule {
	return []tap.Rule{shapeRule(info("EFF-1/effects", vocab.Eff1,
		"every effect is a closed object of a defined type; one invalid effect invalidates the response"))}
}

const eff = vocab.Eff1

// interceptResultProblems checks the result of a hooks/intercept success
// response (at /result): effects required (EFF-1), manifest forbidden
// (CAP-2). Its pointers are constants: nothing is built for a
// conforming response.
func interceptResultProblems(res *tap.Value) []problem {
	var ps []problem
	if has(res, "manifest") {
		ps = append(ps, problem{check: vocab.Cap2, ptr: "/result/manifest",
			msg: "a hooks/intercept result must not carry \"manifest\": discovery and interception never share a response"})
	}
	if ext := res.Get("extensions"); ext != nil && !ext.Is(tap.Object) {
		// BASE-4 judges the keys of an object; anything else is no
		// extensions object at all (intercept-response.schema).
		ps = append(ps, problem{check: eff, ptr: "/result/extensions",
			msg: fmt.Sprintf("\"extensions\" must be an object of reverse-DNS keys, found %s", ext.Describe())})
	}
	effects := res.Get("effects")
	if effects == nil {
		return append(ps, problem{check: eff, ptr: "/result/effects",
			msg: "a hooks/intercept result must carry \"effects\", an array (empty for no effect)"})
	}
	return append(ps, effectProblems(effects, "/result/effects")...)
}

// effectProblems checks an effects array at ptr (§4.1). Besides each
// problem it reports, when an invalid effect takes others down with it, one
// EFF-1 problem at ptr naming every effect of the rejected response (§4.6).
// Content inside inject values is reported as EDIT-1/EDIT-2.
func effectProblems(effects *tap.Value, ptr string) []problem {
	if !effects.Is(tap.Array) {
		return []problem{{check: eff, ptr: ptr, msg: fmt.Sprintf("\"effects\" must be an array of effect objects, found %s", effects.Describe())}}
	}
	c := newChecker(ptr)
	var bad []int
	for i, e := range effects.Arr {
		mark := c.mark()
		c.index(i)
		checkEffect(c, e)
		c.pop()
		if c.failed(mark) {
			bad = append(bad, i)
		}
	}
	if len(bad) > 0 && len(effects.Arr) > 1 {
		c.probs = append(c.probs, problem{check: eff, ptr: ptr, msg: rejectedMessage(effects, bad)})
	}
	return c.done()
}

// rejectedMessage says which invalid effects reject which effects.
func rejectedMessage(effects *tap.Value, bad []int) string {
	var b strings.Builder
	for i, e := range effects.Arr {
		if i > 0 {
			b.WriteString(", ")
		}
		t, ok := e.Get("type").Text()
		if !ok {
			t = "?"
		}
		fmt.Fprintf(&b, "#%d %s", i, t)
	}
	which := make([]string, len(bad))
	for i, n := range bad {
		which[i] = fmt.Sprintf("#%d", n)
	}
	return fmt.Sprintf("invalid effect %s rejects the whole response (§4.6): none of its %d effects (%s) may be applied, a valid deny included",
		strings.Join(which, ", "), len(effects.Arr), b.String())
}

// Effect shapes (§4.1; effect.schema: every effect object is closed).
var (
	effType = req("type", str(eff))

	denyEffect = obj{check: eff, what: "a deny effect", closed: true, fields: []field{
		effType, req("reason", nonEmpty(eff)), opt("code", str(eff)), opt("extensions", objectAny(eff)),
	}}
	allowEffect  = obj{check: eff, what: "an allow effect", closed: true, fields: []field{effType}}
	askEffect    = obj{check: eff, what: "an ask effect", closed: true, fields: []field{effType}}
	modifyEffect = obj{check: eff, what: "a modify effect", closed: true, fields: []field{
		effType,
		req("target", enum(eff, modifyTargets...)),
		req("operation", enum(eff, "replace", "merge")),
		req("value", anyJSON), // its shape per target and boundary: EDIT-4
	}}
	messageEffect = obj{check: eff, what: "a message effect", closed: true, fields: []field{effType, req("text", str(eff))}}
	returnEffect  = obj{check: eff, what: "a return effect", closed: true, fields: []field{effType, req("value", anyJSON)}}
	stopEffect    = obj{check: eff, what: "a flow stop effect", closed: true, fields: []field{
		effType, req("operation", str(eff)), req("reason", nonEmpty(eff)),
	}}
	continueEffect = obj{check: eff, what: "a flow continue effect", closed: true, fields: []field{
		effType, req("operation", str(eff)), opt("instruction", nonEmpty(eff)),
	}}
	injectEffect = obj{check: eff, what: "an inject effect", closed: true, fields: []field{
		effType,
		req("target", constant(eff, "context")),
		req("operation", constant(eff, "append")),
		req("deliverAt", enum(eff, "now", "next_turn")),
		req("value", messages),
	}}
)

func checkEffect(c *checker, e *tap.Value) {
	if !e.Is(tap.Object) {
		c.report(eff, "%s must be an effect object {type, …}, found %s", c.name(), e.Describe())
		return
	}
	t := e.Get("type")
	typ, ok := t.Text()
	if !ok {
		c.reportAt(eff, "type", "an effect must carry a string \"type\", found %s", show(t))
		return
	}
	var spec *obj
	switch typ {
	case "deny":
		spec = &denyEffect
	case "allow":
		spec = &allowEffect
	case "ask":
		spec = &askEffect
	case "modify":
		spec = &modifyEffect
	case "message":
		spec = &messageEffect
	case "return":
		spec = &returnEffect
	case "inject":
		spec = &injectEffect
	case "flow":
		switch op := e.Get("operation"); {
		case op == nil:
			c.reportAt(eff, "operation", "a flow effect must carry \"operation\": \"stop\" or \"continue\"")
			return
		case op.Kind == tap.String && op.Str == "stop":
			spec = &stopEffect
		case op.Kind == tap.String && op.Str == "continue":
			spec = &continueEffect
		default:
			c.reportAt(eff, "operation", "a flow \"operation\" must be \"stop\" or \"continue\", found %s", show(op))
			return
		}
	default:
		// §6.3: an unknown effect type is unsupported semantics; the
		// response is rejected (effect.schema has no extension branch).
		c.reportAt(eff, "type", "effect type %q is not defined (expected one of %s); the response must be rejected", typ, quoteList(coreEffects))
		return
	}
	spec.members(c, e)
}
