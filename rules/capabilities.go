package rules

import (
	"github.com/ahp-tap/ahp-tap/tap"
)

// CAP-1 (AHP-CAP-002): every hooks/intercept carries well-formed
// params.capabilities (§4.2), with deny for tool.before, option blocks that
// match the listed effects, and only what the boundary allows (§4.3).
//
// CAP-2 (AHP-RPC-001): hooks/capabilities request params hold only
// protocolVersion; its result holds manifest and no effects; an intercept
// result holds no manifest; the manifest follows §6.1. The same manifest
// validator checks session.start.manifest, under EVT-1.

func capabilityRules() []tap.Rule {
	return []tap.Rule{
		shapeRule(info("CAP-1/capabilities", "CAP-1", "every hooks/intercept carries well-formed capabilities allowed at its boundary")),
		shapeRule(info("CAP-2/discovery", "CAP-2", "hooks/capabilities request and result shapes; the manifest follows §6.1")),
	}
}

// interceptCapabilityProblems checks params.capabilities of a hooks/intercept
// request whose params are at ptr.
func interceptCapabilityProblems(params *tap.Value, ptr string) []problem {
	c := newChecker(ptr)
	caps := params.Get("capabilities")
	if caps == nil {
		if params.Is(tap.Object) {
			c.reportAt("CAP-1", "capabilities", "hooks/intercept params must carry \"capabilities\" with the effects this request can enforce (AHP-CAP-002)")
		}
		return c.done()
	}
	typ, _ := params.Path("event", "type").Text()
	c.key("capabilities")
	checkCapabilities(c, caps, "CAP-1", typ, true)
	c.pop()
	return c.done()
}

// checkCapabilities checks a capabilities object (§4.2) advertised for
// event type typ, reporting under check. intercept marks the capabilities
// of a live hooks/intercept request (tool.before must offer deny).
func checkCapabilities(c *checker, v *tap.Value, check, typ string, intercept bool) {
	if !v.Is(tap.Object) {
		c.report(check, "\"capabilities\" must be an object with \"effects\", found %s", v.Describe())
		return
	}
	b, atBoundary := boundaries[typ]
	effects := v.Get("effects")
	listed := func(name string) bool {
		for _, e := range effects.Elems() {
			if e.Kind == tap.String && e.Str == name {
				return true
			}
		}
		return false
	}
	c.key("effects")
	switch {
	case effects == nil:
		c.report(check, "\"capabilities\" must carry \"effects\", the list of effects the harness can enforce here (AHP-CAP-002)")
	case !effects.Is(tap.Array):
		c.report(check, "\"effects\" must be an array of effect names, found %s", effects.Describe())
	default:
		capShapesFor(check).effectNames(c, effects)
		for i, e := range effects.Elems() {
			if e.Kind != tap.String || !inSet(e.Str, coreEffects...) || !atBoundary {
				continue // extension names: BASE-4
			}
			if !inSet(e.Str, b.effects...) {
				c.index(i)
				c.report(check, "effect %q cannot be advertised at %s; it allows only %s (§4.3)", e.Str, typ, quoteList(b.effects))
				c.pop()
			}
		}
		if intercept && typ == "tool.before" && !listed("deny") {
			c.report(check, "capabilities at tool.before must include \"deny\" (AHP-CAP-002)")
		}
	}
	c.pop()
	// §4.2: each option block is there exactly when its effect is listed.
	for _, blk := range []string{"modify", "flow", "inject"} {
		switch on, present := listed(blk), has(v, blk); {
		case on && !present:
			c.reportAt(check, blk, "effects lists %q, so capabilities must carry a %q block", blk, blk)
		case present && !on && effects.Is(tap.Array):
			c.reportAt(check, blk, "a %q block needs %q in effects", blk, blk)
		}
	}
	if m := v.Get("modify"); m != nil {
		c.key("modify")
		checkModifyCaps(c, m, check, typ, b, atBoundary)
		c.pop()
	}
	if f := v.Get("flow"); f != nil {
		c.key("flow")
		checkFlowCaps(c, f, check, typ, b, atBoundary)
		c.pop()
	}
	if in := v.Get("inject"); in != nil {
		c.at("inject", in, capShapesFor(check).inject)
	}
	if el := v.Get("elicitation"); el != nil {
		c.at("elicitation", el, capShapesFor(check).elicitation)
	}
}

func checkModifyCaps(c *checker, m *tap.Value, check, typ string, b boundary, atBoundary bool) {
	if !m.Is(tap.Object) {
		c.report(check, "\"modify\" must be an object of targets, found %s", m.Describe())
		return
	}
	if len(m.Obj) == 0 {
		c.report(check, "\"modify\" must name at least one target")
	}
	for _, t := range m.Obj {
		c.key(t.Key)
		switch {
		case atBoundary && t.Key != b.target && b.target != "":
			c.report(check, "modify target %q cannot be advertised at %s; only %q (§4.3)", t.Key, typ, b.target)
		case atBoundary && b.target == "":
			c.report(check, "%s allows no modify target (§4.3)", typ)
		case !atBoundary && !inSet(t.Key, modifyTargets...):
			// Unknown targets outside a known boundary are ignored (BASE-3).
		}
		ops := t.Val
		if !ops.Is(tap.Object) {
			c.report(check, "modify target %q must be an object {replace, merge}, found %s", t.Key, ops.Describe())
			c.pop()
			continue
		}
		for _, k := range []string{"replace", "merge"} {
			if x := ops.Get(k); x == nil {
				c.reportAt(check, k, "modify target %q must carry boolean %q", t.Key, k)
			} else if !x.Is(tap.Bool) {
				c.reportAt(check, k, "%q must be a boolean, found %s", k, show(x))
			}
		}
		if r, mg := ops.Get("replace"), ops.Get("merge"); !(r.Is(tap.Bool) && r.Bool) && !(mg.Is(tap.Bool) && mg.Bool) {
			c.report(check, "modify target %q must allow at least one of replace or merge", t.Key)
		}
		c.pop()
	}
}

var flowOps = []string{"stop", "continue"}

func checkFlowCaps(c *checker, f *tap.Value, check, typ string, b boundary, atBoundary bool) {
	if !f.Is(tap.Object) {
		c.report(check, "\"flow\" must be an object {operations, …}, found %s", f.Describe())
		return
	}
	ops := f.Get("operations")
	c.key("operations")
	if ops == nil {
		c.report(check, "\"flow\" must carry \"operations\"")
	} else {
		capShapesFor(check).flowOps(c, ops)
		if atBoundary {
			for i, o := range ops.Elems() {
				if o.Kind == tap.String && inSet(o.Str, flowOps...) && !inSet(o.Str, b.flowOps...) {
					c.index(i)
					if len(b.flowOps) == 0 {
						c.report(check, "flow %q cannot be advertised at %s, which allows no flow effect (§4.3)", o.Str, typ)
					} else {
						c.report(check, "flow %q cannot be advertised at %s; it allows only %s (§4.3)", o.Str, typ, quoteList(b.flowOps))
					}
					c.pop()
				}
			}
		}
	}
	c.pop()
	for _, k := range []string{"remainingContinuations", "continuationCount", "maxContinuations"} {
		if x := f.Get(k); x != nil {
			c.at(k, x, capShapesFor(check).count)
		}
	}
	hasContinue := false
	for _, o := range ops.Elems() {
		hasContinue = hasContinue || (o.Kind == tap.String && o.Str == "continue")
	}
	if hasContinue {
		for _, k := range []string{"remainingContinuations", "continuationCount"} {
			if !has(f, k) {
				c.reportAt(check, k, "flow lists \"continue\", so it must carry %q (an integer ≥ 0)", k)
			}
		}
	}
}

// capShapes are the capability and manifest shapes of one check, built
// once so that a walk allocates nothing.
type capShapes struct {
	effectNames, flowOps, modes, eventType, count, inject, elicitation shape
}

var capShapesByCheck = func() map[string]*capShapes {
	m := make(map[string]*capShapes)
	for _, check := range []string{"CAP-1", "CAP-2", evt} {
		m[check] = &capShapes{
			effectNames: uniqueStrings(check, 0, str(check)),
			flowOps:     uniqueStrings(check, 1, enum(check, flowOps...)),
			modes:       uniqueStrings(check, 1, enum(check, "observe", "intercept")),
			eventType:   enum(check, eventTypes...),
			count:       integer(check, 0),
			inject:      injectCaps(check),
			elicitation: (&obj{check: check, what: "the elicitation capability", fields: []field{
				opt("form", objectAny(check)), opt("url", objectAny(check)),
			}}).shape(),
		}
	}
	return m
}()

func capShapesFor(check string) *capShapes { return capShapesByCheck[check] }

func injectCaps(check string) shape {
	return (&obj{check: check, what: "the inject capability", fields: []field{
		req("context", (&obj{check: check, what: "the inject context capability", fields: []field{
			req("append", func(c *checker, v *tap.Value) {
				if !v.Is(tap.Bool) || !v.Bool {
					c.report(check, "\"append\" must be true, found %s", show(v))
				}
			}),
			req("deliverAt", uniqueStrings(check, 1, enum(check, "now", "next_turn"))),
		}}).shape()),
	}}).shape()
}

// capabilitiesRequestProblems checks the params of a hooks/capabilities
// request: only protocolVersion (§2.6; its value is BASE-2's).
func capabilitiesRequestProblems(params *tap.Value, ptr string) []problem {
	if !params.Is(tap.Object) {
		return nil // BASE-1
	}
	c := newChecker(ptr)
	for _, m := range params.Obj {
		if m.Key != "protocolVersion" {
			c.reportAt("CAP-2", m.Key, "hooks/capabilities params hold only \"protocolVersion\"; %q is not allowed", m.Key)
		}
	}
	return c.done()
}

// capabilitiesResultProblems checks the result of hooks/capabilities:
// manifest required, effects forbidden (§2.6), manifest per §6.1.
func capabilitiesResultProblems(res *tap.Value, ptr string) []problem {
	c := newChecker(ptr)
	if has(res, "effects") {
		c.reportAt("CAP-2", "effects", "a hooks/capabilities result must not carry \"effects\": discovery and interception never share a response")
	}
	if m := res.Get("manifest"); m == nil {
		c.reportAt("CAP-2", "manifest", "a hooks/capabilities result must carry \"manifest\"")
	} else {
		c.key("manifest")
		checkManifest(c, m, "CAP-2")
		c.pop()
	}
	return c.done()
}

// manifestProblems checks a capability manifest (§6.1) at ptr, reporting
// under check.
func manifestProblems(v *tap.Value, ptr, check string) []problem {
	c := newChecker(ptr)
	checkManifest(c, v, check)
	return c.done()
}

// manifestSpecs are the manifest shapes, one per check that reports them.
var manifestSpecs = map[string]*obj{"CAP-2": newManifestSpec("CAP-2"), evt: newManifestSpec(evt)}

// checkManifest checks a capability manifest (§6.1) under check ("CAP-2"
// for discovery, "EVT-1" inside session.start).
func checkManifest(c *checker, v *tap.Value, check string) {
	manifestSpecs[check].check1(c, v)
}

func newManifestSpec(check string) *obj {
	strs := uniqueStrings(check, 0, nonEmpty(check))
	return &obj{check: check, what: "the manifest", fields: []field{
		req("events", list(check, 0, func(c *checker, v *tap.Value) { checkManifestEntry(c, v, check) })),
		req("gaps", list(check, 0, (&obj{check: check, what: "a gap", fields: []field{
			req("path", nonEmpty(check)), req("reason", nonEmpty(check)),
		}}).shape())),
		req("transports", uniqueStrings(check, 0, enum(check, "http", "stdio", "in_process"))),
		req("authentication", uniqueStrings(check, 0, authMethod(check))),
		req("toolPaths", strs),
		req("contentCategories", strs),
		req("limits", (&obj{check: check, what: "the limits object", fields: []field{
			opt("maxUploadBytes", integer(check, 0)),
			opt("maxContinuations", integer(check, 0)),
			opt("minTimeoutMs", integer(check, 0)),
			opt("maxTimeoutMs", integer(check, 0)),
		}}).shape()),
		req("managedPolicy", (&obj{check: check, what: "the managedPolicy object", fields: []field{
			req("scopes", uniqueStrings(check, 0, enum(check, "user", "project", "managed"))),
			req("disableable", boolean(check)),
		}, also: func(c *checker, v *tap.Value) {
			managed := false
			for _, s := range v.Get("scopes").Elems() {
				managed = managed || (s.Kind == tap.String && s.Str == "managed")
			}
			if d := v.Get("disableable"); managed && d.Is(tap.Bool) && d.Bool {
				c.reportAt(check, "disableable", "a managed policy scope cannot be disableable: \"disableable\" must be false")
			}
		}}).shape()),
		req("correlationIdentityFields", strs),
		ban("identity", "a manifest never carries identity"),
	}}
}

// checkManifestEntry checks one manifest events[] entry.
func checkManifestEntry(c *checker, v *tap.Value, check string) {
	if !v.Is(tap.Object) {
		c.report(check, "%s must be an object {event, modes, capabilities?}, found %s", c.name(), v.Describe())
		return
	}
	ev := v.Get("event")
	c.key("event")
	if ev == nil {
		c.report(check, "a manifest entry must carry \"event\"")
	} else {
		capShapesFor(check).eventType(c, ev)
	}
	c.pop()
	modes := v.Get("modes")
	c.key("modes")
	if modes == nil {
		c.report(check, "a manifest entry must carry \"modes\"")
	} else {
		capShapesFor(check).modes(c, modes)
	}
	c.pop()
	intercept := false
	for _, m := range modes.Elems() {
		intercept = intercept || (m.Kind == tap.String && m.Str == "intercept")
	}
	typ, _ := ev.Text()
	_, interceptable := boundaries[typ]
	caps := v.Get("capabilities")
	switch {
	case intercept && inSet(typ, eventTypes...) && !interceptable:
		c.reportAt(check, "modes", "%q is observe-only; its manifest entry must not list \"intercept\"", typ)
	case intercept && caps == nil:
		c.reportAt(check, "capabilities", "a manifest entry with mode \"intercept\" must carry \"capabilities\"")
	case !intercept && caps != nil:
		if n := len(caps.Get("effects").Elems()); n > 0 {
			c.key("capabilities")
			c.reportAt(check, "effects", "an observe-only manifest entry advertises no effects; found %d", n)
			c.pop()
		}
	}
	if caps != nil {
		c.key("capabilities")
		bt := ""
		if interceptable {
			bt = typ
		}
		checkCapabilities(c, caps, check, bt, false)
		c.pop()
	}
}

// authMethod is one manifest authentication method: "bearer" or "oauth"
// (AHP-AUTH-001). "mtls" and "workload" are the older draft's.
func authMethod(check string) shape {
	e := enum(check, "bearer", "oauth")
	return func(c *checker, v *tap.Value) {
		e(c, v)
		if s, _ := v.Text(); inSet(s, olderAuthTypes...) {
			c.olderDraft(draftWithWorkloadAuth)
		}
	}
}
