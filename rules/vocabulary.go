package rules

import "slices"

// The protocol's vocabulary, in one place: its methods, its event types
// (with whether each may be intercepted), its effect types and modify
// targets, and what each interceptable boundary allows. Every rule reads
// these tables, or a table derived from them below; nothing else lists
// them. vocabulary_test.go checks them against the upstream draft schemas
// and against the event payload specs, so that removing or adding an
// entry here (or upstream) breaks a test.

// The three AHP methods (§2.1).
const (
	methodIntercept    = "hooks/intercept"
	methodObserve      = "hooks/observe"
	methodCapabilities = "hooks/capabilities"
)

// protocolMethods are the AHP methods, in §2.1 order.
var protocolMethods = []string{methodIntercept, methodObserve, methodCapabilities}

// A protocolEvent is one of the standard event types (§3.3).
type protocolEvent struct {
	name          string
	interceptable bool // may travel in hooks/intercept
}

// protocolEvents are the 32 standard event types of the draft, the 19
// interceptable ones first. Any other type, removed names such as
// tool.error and prompt.submitted included, is unsupported semantics
// (AHP-CORE-003).
var protocolEvents = []protocolEvent{
	{"tool.before", true}, {"tool.after", true}, {"session.start", true}, {"config.change.before", true},
	{"turn.start", true}, {"turn.finish.before", true}, {"model.request.before", true},
	{"model.switch.before", true}, {"tool.permission.request", true}, {"tool.batch.after", true},
	{"context.compact.before", true}, {"context.compact.after", true}, {"task.change.before", true},
	{"user.elicitation.request", true}, {"user.elicitation.result", true}, {"user.message.inbound", true},
	{"user.message.outbound", true}, {"workspace.change.before", true}, {"model.response.after", true},

	{"session.end", false}, {"config.change.after", false}, {"turn.end", false}, {"turn.progress", false},
	{"model.error", false}, {"model.switch.after", false}, {"tool.permission.resolved", false},
	{"tool.progress", false}, {"task.change.after", false}, {"user.attention", false},
	{"workspace.change.after", false}, {"file.changed", false}, {"hook.failure", false},
}

// coreEffects are the effect types AHP defines (§4.1).
var coreEffects = []string{"deny", "allow", "ask", "modify", "message", "return", "flow", "inject"}

// modifyTargets are the targets a modify effect can name (§4.1).
var modifyTargets = []string{"input", "output", "prompt", "request", "response", "content", "instructions", "summary", "workspace"}

// A boundary says what an interceptable event allows (§4.3).
type boundary struct {
	effects []string
	target  string   // the modify target, "" for none
	flowOps []string // flow operations
}

// boundaries maps each interceptable event to what it allows (§4.3,
// capabilities.schema per-boundary definitions).
var boundaries = map[string]boundary{
	"session.start":            {effects: []string{"inject", "message"}},
	"config.change.before":     {effects: []string{"deny", "message"}},
	"turn.start":               {effects: []string{"deny", "modify", "inject", "flow", "message"}, target: "prompt", flowOps: []string{"stop"}},
	"turn.finish.before":       {effects: []string{"modify", "flow", "message"}, target: "response", flowOps: []string{"stop", "continue"}},
	"model.request.before":     {effects: []string{"deny", "modify", "inject", "return", "flow", "message"}, target: "request", flowOps: []string{"stop"}},
	"model.response.after":     {effects: []string{"modify", "flow", "message"}, target: "response", flowOps: []string{"stop"}},
	"model.switch.before":      {effects: []string{"deny", "flow", "message"}, flowOps: []string{"stop"}},
	"tool.before":              {effects: []string{"deny", "allow", "ask", "modify", "inject", "flow", "return", "message"}, target: "input", flowOps: []string{"stop"}},
	"tool.after":               {effects: []string{"modify", "inject", "flow", "message"}, target: "output", flowOps: []string{"stop", "continue"}},
	"tool.permission.request":  {effects: []string{"allow", "deny", "modify", "flow", "message"}, target: "input", flowOps: []string{"stop"}},
	"tool.batch.after":         {effects: []string{"flow", "inject", "message"}, flowOps: []string{"stop"}},
	"context.compact.before":   {effects: []string{"deny", "modify", "return", "inject", "message"}, target: "instructions"},
	"context.compact.after":    {effects: []string{"inject", "modify", "message"}, target: "summary"},
	"task.change.before":       {effects: []string{"deny", "message"}},
	"user.elicitation.request": {effects: []string{"deny", "return", "message"}},
	"user.elicitation.result":  {effects: []string{"modify", "message"}, target: "content"},
	"user.message.inbound":     {effects: []string{"deny", "modify", "message"}, target: "prompt"},
	"user.message.outbound":    {effects: []string{"deny", "modify", "message"}, target: "content"},
	"workspace.change.before":  {effects: []string{"deny", "modify", "message"}, target: "workspace"},
}

// ---- derived tables ------------------------------------------------------

var (
	// wireEvents maps every standard event type to whether it is
	// interceptable.
	wireEvents = func() map[string]bool {
		m := make(map[string]bool, len(protocolEvents))
		for _, e := range protocolEvents {
			m[e.name] = e.interceptable
		}
		return m
	}()
	// interceptableEvents are the 19 events hooks/intercept may carry.
	interceptableEvents = eventNames(true)
	// eventTypes are the 32 standard event types.
	eventTypes = append(eventNames(true), eventNames(false)...)
	// continueAllowed lists the only events where flow continue may be
	// returned (capability-auth prose bounds, §4.3).
	continueAllowed = func() map[string]bool {
		m := make(map[string]bool)
		for name, b := range boundaries {
			if slices.Contains(b.flowOps, "continue") {
				m[name] = true
			}
		}
		return m
	}()
	// coreEffectNames is coreEffects as a set; any other name in
	// capabilities.effects is an extension effect and must be reverse-DNS.
	coreEffectNames = func() map[string]bool {
		m := make(map[string]bool, len(coreEffects))
		for _, e := range coreEffects {
			m[e] = true
		}
		return m
	}()
)

func eventNames(interceptable bool) []string {
	var out []string
	for _, e := range protocolEvents {
		if e.interceptable == interceptable {
			out = append(out, e.name)
		}
	}
	return out
}
