package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// This file is the edit evaluator (AHP-EDIT-001, AHP-CONTENT-002,
// AHP-CAP-001; protocol-notes §4.4–4.6): given the context a response
// answers and the response's effect list, it decides whether a conforming
// harness accepts the response and, if so, what each edited target becomes.
// It is a library: the EDIT-3…EDIT-7 rules, `check --edit-context` and
// replay all call it, so they agree by construction.

// EffectsPointer is where a response's effect list lives; every pointer an
// evaluation reports is a JSON Pointer into the response below it.
const EffectsPointer = "/result/effects"

// An EditContext is what the host knew when it sent the event a response
// answers: which boundary, the current value of each target, what the
// request advertised and what the subscription selected. Zero values mean
// "unknown" and turn off the checks that need them, never into findings.
type EditContext struct {
	// EventType is the boundary ("tool.after"); "" when unknown, and then
	// targets are judged by their own kind only.
	EventType string
	// Known says Current reflects the event: a target missing from it is
	// absent from the event, and Carried lists every attachment it held.
	Known bool
	// Current is the value of each target the event exposes, by target.
	Current map[string]*tap.Value
	// Carried are the attachment parts the event carried; an edit may
	// keep them unchanged, remove or reorder them (EDIT-3).
	Carried []*tap.Value
	// Capabilities is params.capabilities of the request; nil when
	// unknown, which skips the capability checks (EDIT-6).
	Capabilities *tap.Value
	// Selection is the subscription's content selection ({default, text,
	// images…}); nil when no registration is known.
	Selection *tap.Value
	// Mode and Action are the elicitation envelope's mode and action ("" when
	// unknown or not an elicitation boundary).
	Mode, Action string
	// Form is the requested form schema of the elicitation this result
	// answers, when known: edited content must still fit it.
	Form *tap.Value
	// Blocked says why a target the boundary defines cannot be edited in
	// this event (for example an elicitation result that was not
	// body-selected).
	Blocked map[string]EditReason
}

// An EditReason is one reason a response's edits are rejected.
type EditReason struct {
	// Check is the catalogue check the reason belongs to: EDIT-3…EDIT-6;
	// EDIT-1 or EDIT-2 for a content fault inside a modify value (the
	// check the same fault gets in an event); EFF-1, EDIT-1, EDIT-2 or
	// BASE-9 for problems of the effect list that other rules report.
	Check vocab.CheckID `json:"check"`
	// Pointer is a JSON Pointer into the response.
	Pointer string `json:"pointer"`
	Message string `json:"message"`
	// Stage is "effects" for a problem of the effect list as such (found
	// without any context) and "edit" for one found against the context.
	Stage string `json:"stage"`
	// older is the earlier draft a content fault's shape matches (hint).
	older olderDraft
}

// An EditResult is the verdict on one response.
type EditResult struct {
	// Accepted says a conforming harness applies the response. One
	// invalid effect rejects all of it (EDIT-7).
	Accepted bool
	// Effective is the effective value of each target the response edited,
	// when it is accepted and the value can be computed.
	Effective map[string]*tap.Value
	// Unknown lists targets merged over a current value that is not known
	// (a standalone response without context).
	Unknown []string
	// Reasons lists every reason the response is rejected, in effect order.
	Reasons []EditReason
	// Ends says an accepted deny or flow stop ended decision-making: a
	// chain calls no later interceptor (§4.5).
	Ends bool
	// NotReached says the response came after a chain had already ended.
	NotReached bool
}

// MarshalJSON renders the result for the exchange record: effective values
// as JSON, and the reasons a reader needs.
func (r EditResult) MarshalJSON() ([]byte, error) {
	type out struct {
		Accepted   bool                       `json:"accepted"`
		Effective  map[string]json.RawMessage `json:"effective,omitempty"`
		Unknown    []string                   `json:"unknownEffective,omitempty"`
		Reasons    []EditReason               `json:"reasons,omitempty"`
		Ends       bool                       `json:"endsChain,omitempty"`
		NotReached bool                       `json:"notReached,omitempty"`
	}
	o := out{Accepted: r.Accepted, Unknown: r.Unknown, Reasons: r.Reasons, Ends: r.Ends, NotReached: r.NotReached}
	if len(r.Effective) > 0 {
		o.Effective = make(map[string]json.RawMessage, len(r.Effective))
		for k, v := range r.Effective {
			o.Effective[k] = v.Canonical()
		}
	}
	return json.Marshal(o)
}

// valueKind is the shape a modify target takes at a boundary.
type valueKind uint8

const (
	kindMessages         valueKind = iota + 1 // a canonical message list
	kindTextParts                             // a text-part list
	kindObject                                // an actual JSON object
	kindAnswer                                // the MCP answer object of an accepted form result
	kindMessagesOrAnswer                      // content at an unknown boundary
)

func (k valueKind) describe() string {
	switch k {
	case kindMessages:
		return "a message list"
	case kindTextParts:
		return "a text-part list"
	case kindObject:
		return "an object"
	case kindAnswer:
		return "the MCP answer object of an accepted form result"
	}
	return "a message list or an object"
}

// A slot is where a target lives in an event (§4.4).
type slot struct {
	kind valueKind
	role string   // role every message must have ("" any)
	path []string // members from the event to the target
}

// slots maps each boundary to the targets a modify may edit there and the
// event slot each edits (protocol-notes §4.3, §4.4).
var slots = map[string]map[string]slot{
	"turn.start":              {"prompt": {kindMessages, "", []string{"items"}}},
	"user.message.inbound":    {"prompt": {kindMessages, "user", []string{"message", "messages"}}},
	"model.request.before":    {"request": {kindMessages, "", []string{"items"}}},
	"model.response.after":    {"response": {kindMessages, "", []string{"items"}}},
	"turn.finish.before":      {"response": {kindMessages, "", []string{"items"}}},
	"tool.after":              {"output": {kindMessages, "", []string{"items"}}},
	"user.message.outbound":   {"content": {kindMessages, "assistant", []string{"message", "messages"}}},
	"user.elicitation.result": {"content": {kindAnswer, "", nil}},
	"context.compact.before":  {"instructions": {kindTextParts, "", []string{"instructions"}}},
	"context.compact.after":   {"summary": {kindTextParts, "", []string{"summary"}}},
	"tool.before":             {"input": {kindObject, "", []string{"tool", "input"}}},
	"tool.permission.request": {"input": {kindObject, "", []string{"tool", "input"}}},
	"workspace.change.before": {"workspace": {kindObject, "", []string{"workspace"}}},
}

// targetKinds is the kind of each modify target when the boundary is not
// known (effect.schema: content is messages or an object).
var targetKinds = map[string]valueKind{
	"prompt": kindMessages, "request": kindMessages, "response": kindMessages, "output": kindMessages,
	"instructions": kindTextParts, "summary": kindTextParts,
	"input": kindObject, "workspace": kindObject,
	"content": kindMessagesOrAnswer,
}

// knownEvents are the 32 event types of the draft; a context naming
// another type is judged as an unknown boundary.
var knownEvents = []string{
	"session.start", "session.end", "tool.before", "tool.after", "turn.start", "turn.finish.before", "turn.end",
	"turn.progress", "model.request.before", "model.response.after", "model.error", "model.switch.before",
	"model.switch.after", "tool.permission.request", "tool.permission.resolved", "tool.progress", "tool.batch.after",
	"context.compact.before", "context.compact.after", "config.change.before", "config.change.after",
	"task.change.before", "task.change.after", "workspace.change.before", "workspace.change.after", "file.changed",
	"user.attention", "user.elicitation.request", "user.elicitation.result", "user.message.inbound",
	"user.message.outbound", "hook.failure",
}

// EventEditContext is the context of a live hooks/intercept request: the
// event, its advertised capabilities (nil: unknown) and the matched
// subscription's content selection (nil: no registration known).
func EventEditContext(ev, caps, selection *tap.Value) EditContext {
	ctx := EditContext{}
	// Malformed capabilities or selection are other checks' findings
	// (CAP-1, BASE-5); here they count as unknown.
	if caps.Is(tap.Object) {
		ctx.Capabilities = caps
	}
	if selection.Is(tap.Object) {
		ctx.Selection = selection
	}
	t, _ := ev.Get("type").Text()
	if !slices.Contains(knownEvents, t) {
		return ctx // unsupported semantics (BASE-3); judge targets alone
	}
	ctx.EventType, ctx.Known = t, true
	ctx.Current = make(map[string]*tap.Value)
	for target, s := range slots[t] {
		if s.path != nil {
			ctx.Current[target] = ev.Path(s.path...)
		}
	}
	ctx.Carried = attachmentsIn(ev, nil)
	if t == "user.elicitation.result" {
		el := ev.Get("elicitation")
		ctx.Mode, _ = el.Get("mode").Text()
		ctx.Action, _ = el.Get("action").Text()
		content, why := elicitationContent(el.Get("result"))
		if why != nil {
			ctx.Blocked = map[string]EditReason{"content": *why}
		} else {
			ctx.Current["content"] = content
		}
	}
	return ctx
}

// elicitationContent is the answer object inside a body-selected result
// part, or why there is none to edit.
func elicitationContent(part *tap.Value) (*tap.Value, *EditReason) {
	if part == nil {
		return nil, &EditReason{Check: vocab.Edit4, Message: "the event carries no elicitation result, so there is no content to edit"}
	}
	text, ok := part.Get("text").Text()
	if sel, _ := part.Get("selection").Text(); sel != "body" || part.Has("gap") || !ok {
		// AHP-CAP-001: an edit needs body selection; inline values never bypass it.
		return nil, &EditReason{Check: vocab.Edit6, Message: "the event's elicitation result is not body-selected, so its content cannot be edited (inline values never bypass selection)"}
	}
	doc, faults := parseMCP(text)
	if len(faults) > 0 {
		return nil, &EditReason{Check: vocab.Edit4, Message: "the event's elicitation result text is not a valid MCP ElicitResult, so there is no content to edit"}
	}
	if c := doc.Get("content"); c != nil {
		return c, nil
	}
	return &tap.Value{Kind: tap.Object}, nil
}

// ParseEditContext reads the host context of `check --edit-context`:
// {event, current{target: value}, mode, action} and, optionally, the
// capabilities the request advertised, the subscription's content
// selection ("content") and the requested form of an elicitation
// ("requestedSchema"). Without capabilities, EDIT-6 is skipped.
func ParseEditContext(v *tap.Value) (EditContext, error) {
	var ctx EditContext
	if !v.Is(tap.Object) {
		return ctx, fmt.Errorf("the edit context must be a JSON object, found %s", v.Describe())
	}
	t, ok := v.Get("event").Text()
	if !ok {
		return ctx, fmt.Errorf(`the edit context needs "event", the event type, found %s`, show(v.Get("event")))
	}
	if slices.Contains(knownEvents, t) {
		ctx.EventType = t
	}
	if cur := v.Get("current"); cur != nil {
		if !cur.Is(tap.Object) {
			return ctx, fmt.Errorf(`"current" must be an object of target values, found %s`, cur.Describe())
		}
		ctx.Known = ctx.EventType != ""
		ctx.Current = make(map[string]*tap.Value, len(cur.Obj))
		for _, m := range cur.Obj {
			ctx.Current[m.Key] = m.Val
			ctx.Carried = attachmentsIn(m.Val, ctx.Carried)
		}
	}
	ctx.Mode, _ = v.Get("mode").Text()
	ctx.Action, _ = v.Get("action").Text()
	if c := v.Get("capabilities"); c.Is(tap.Object) {
		ctx.Capabilities = c
	}
	if s := v.Get("content"); s.Is(tap.Object) {
		ctx.Selection = s
	}
	if f := v.Get("requestedSchema"); f.Is(tap.Object) {
		ctx.Form = f
	}
	return ctx, nil
}

// attachmentsIn appends every attachment part found anywhere in v.
func attachmentsIn(v *tap.Value, out []*tap.Value) []*tap.Value {
	switch {
	case v == nil:
	case v.Kind == tap.Array:
		for _, e := range v.Arr {
			out = attachmentsIn(e, out)
		}
	case v.Kind == tap.Object:
		if k, _ := v.Get("kind").Text(); k == "attachment" {
			return append(out, v)
		}
		for _, m := range v.Obj {
			out = attachmentsIn(m.Val, out)
		}
	}
	return out
}

// EvaluateEdits judges one response's effect list in ctx. It validates the
// whole list before staging anything (§4.6), stages detached candidates
// without changing ctx or effects, and returns the effective value of
// every edited target, or every reason the response is rejected.
func EvaluateEdits(ctx EditContext, effects *tap.Value) EditResult {
	ev := evaluation{ctx: ctx}
	return ev.run(effects)
}

// EvaluateChain judges the responses of a chain of interceptors for one
// event, in order (§4.5): each accepted response applies over the
// effective value so far; a rejected one changes nothing and does not
// undo earlier accepted ones; after an accepted deny or flow stop, later
// responses are not reached.
func EvaluateChain(ctx EditContext, responses []*tap.Value) []EditResult {
	out := make([]EditResult, len(responses))
	cur := make(map[string]*tap.Value, len(ctx.Current))
	for k, v := range ctx.Current {
		cur[k] = v
	}
	ended := false
	for i, effects := range responses {
		if ended {
			out[i] = EditResult{NotReached: true}
			continue
		}
		step := ctx
		step.Current = cur
		r := EvaluateEdits(step, effects)
		if r.Accepted {
			next := make(map[string]*tap.Value, len(cur))
			for k, v := range cur {
				next[k] = v
			}
			for k, v := range r.Effective {
				next[k] = v
			}
			cur = next
			ended = r.Ends
		}
		out[i] = r
	}
	return out
}

// evaluation is the state of one EvaluateEdits call.
type evaluation struct {
	ctx     EditContext
	staged  map[string]*tap.Value // detached candidates, by target (nil: ctx.Current until a modify stages one)
	edited  []string              // targets edited, in order
	unknown []string              // targets whose effective value is unknown
	reasons []EditReason
	flagged map[string]bool // pointers the effect-list stage flagged
}

// candidate is the staged candidate of target: the context's current
// value until a modify stages another.
func (ev *evaluation) candidate(target string) *tap.Value {
	if ev.staged == nil {
		return ev.ctx.Current[target]
	}
	return ev.staged[target]
}

// setCandidate stages v for target, copying the context's current values
// first (most responses edit nothing, and pay for no copy).
func (ev *evaluation) setCandidate(target string, v *tap.Value) {
	if ev.staged == nil {
		ev.staged = make(map[string]*tap.Value, len(ev.ctx.Current)+1)
		for k, c := range ev.ctx.Current {
			ev.staged[k] = c
		}
	}
	ev.staged[target] = v
}

func (ev *evaluation) reject(check vocab.CheckID, ptr, stage, format string, args ...any) {
	ev.reasons = append(ev.reasons, EditReason{Check: check, Pointer: ptr, Message: fmt.Sprintf(format, args...), Stage: stage})
}

func (ev *evaluation) run(effects *tap.Value) EditResult {
	// 1. The effect list as such (closed objects, defined types and fields).
	for _, p := range effectProblems(effects, EffectsPointer) {
		ev.reject(p.check, p.ptr, "effects", "%s", p.msg)
		if ev.flagged == nil {
			ev.flagged = make(map[string]bool)
		}
		ev.flagged[p.ptr] = true
	}
	if effects != nil && !effects.Is(tap.Array) && len(ev.reasons) == 0 {
		ev.reject(vocab.Eff1, EffectsPointer, "effects", `"effects" must be a list of effects, found %s`, effects.Describe())
	}
	// 2. Each effect against the context; modify effects are staged.
	ends := false
	for i, e := range effects.Elems() {
		ptr := tap.Ptr(EffectsPointer, i)
		typ, _ := e.Get("type").Text()
		if caps := ev.ctx.Capabilities; caps != nil && typ != "" && typ != "modify" && !listsString(caps.Get("effects"), typ) {
			// AHP-CAP-001: an unadvertised effect is an operational failure,
			// and it takes the whole response down (§4.6). BASE-9 reports it.
			ev.reject(vocab.Base9, tap.Ptr(ptr, "type"), "edit", "effect %q was not advertised in capabilities.effects", typ)
		}
		switch typ {
		case "modify":
			ev.modify(ptr, e)
		case "deny":
			ends = true
		case "flow":
			if op, _ := e.Get("operation").Text(); op == "stop" {
				ends = true
			}
		}
	}
	ev.dedupe()
	if len(ev.reasons) > 0 {
		return EditResult{Reasons: ev.reasons}
	}
	res := EditResult{Accepted: true, Ends: ends, Unknown: ev.unknown}
	for _, t := range ev.edited {
		if v := ev.candidate(t); v != nil && !slices.Contains(ev.unknown, t) {
			if res.Effective == nil {
				res.Effective = make(map[string]*tap.Value)
			}
			res.Effective[t] = v
		}
	}
	return res
}

// dedupe drops contextual reasons at a pointer the effect-list stage
// already explained, and exact repeats.
func (ev *evaluation) dedupe() {
	if len(ev.reasons) == 0 {
		return
	}
	seen := make(map[EditReason]bool)
	ev.reasons = slices.DeleteFunc(ev.reasons, func(r EditReason) bool {
		if r.Stage == "edit" && r.Check == vocab.Edit4 && ev.flagged[r.Pointer] {
			return true
		}
		if seen[r] {
			return true
		}
		seen[r] = true
		return false
	})
}

// modify checks one modify effect at ptr and stages it when it is valid.
func (ev *evaluation) modify(ptr string, e *tap.Value) {
	target, _ := e.Get("target").Text()
	op, _ := e.Get("operation").Text()
	val := e.Get("value")
	fixed, ok := targetKinds[target]
	if !ok || (op != "replace" && op != "merge") || val == nil {
		if !ev.flaggedUnder(ptr) {
			ev.reject(vocab.Eff1, ptr, "effects", "a modify effect needs a defined target, operation replace or merge, and a value")
		}
		return
	}
	mark := len(ev.reasons)
	ctx := ev.ctx
	kind, role := fixed, ""
	if ctx.EventType != "" {
		s, ok := slots[ctx.EventType][target]
		if !ok {
			ev.reject(vocab.Edit4, tap.Ptr(ptr, "target"), "edit", "%s", noSlotMessage(ctx.EventType, target))
			return
		}
		kind, role = s.kind, s.role
	}
	// EDIT-6, AHP-CAP-001: the exact target and operation must be advertised.
	if caps := ctx.Capabilities; caps != nil {
		if !listsString(caps.Get("effects"), "modify") {
			// The effect type itself is unadvertised: BASE-9 reports that;
			// the reason still rejects the response, once.
			ev.reject(vocab.Base9, tap.Ptr(ptr, "type"), "edit", "the request did not advertise modify in capabilities.effects")
		} else if b := caps.Path("modify", target, op); !b.Is(tap.Bool) || !b.Bool {
			ev.reject(vocab.Edit6, tap.Ptr(ptr, "operation"), "edit", "the request did not advertise capabilities.modify.%s.%s: true, so modify(%s, %s) is not allowed", target, op, target, op)
		}
	}
	if why, ok := ctx.Blocked[target]; ok {
		why.Pointer, why.Stage = tap.Ptr(ptr, "target"), "edit"
		ev.reasons = append(ev.reasons, why)
		return
	}
	if kind == kindAnswer && ctx.Mode != "" && (ctx.Mode != "form" || ctx.Action != "accept") {
		ev.reject(vocab.Edit4, tap.Ptr(ptr, "target"), "edit", "elicitation content can be edited only on an accepted form result; this result has mode %q and action %q", ctx.Mode, ctx.Action)
		return
	}
	cur, known := ev.candidate(target), ctx.Known
	if kind == kindMessagesOrAnswer && known && cur != nil {
		// The boundary is unknown but the current value says which it is.
		kind = kindMessages
		if cur.Is(tap.Object) {
			kind = kindAnswer
		}
	}
	// EDIT-5: merge applies only when value and target are the same kind.
	if op == "merge" && (val.Is(tap.Array) || val.Is(tap.Object)) {
		if wantList, ok := targetIsList(kind, cur, known); ok && wantList != val.Is(tap.Array) {
			ev.reject(vocab.Edit5, tap.Ptr(ptr, "value"), "edit", "merge needs a value of the target's kind: %s is %s here, but the value is %s", target, kind.describe(), val.Describe())
			return
		}
	}
	ev.checkShape(tap.Ptr(ptr, "value"), target, kind, role, val)
	if (kind == kindObject) && known && !cur.Is(tap.Object) {
		ev.reject(vocab.Edit4, tap.Ptr(ptr, "target"), "edit", "%s needs an actual object target, but the event's %s is %s", target, target, cur.Describe())
	}
	if known {
		ev.checkAttachments(tap.Ptr(ptr, "value"), val)
		if op == "replace" && (kind == kindMessages || kind == kindTextParts) {
			if at := hiddenTextPart(cur); at != "" {
				ev.reject(vocab.Edit3, tap.Ptr(ptr, "operation"), "edit", "a whole-list replace of %s is rejected because the current list holds a metadata, omit or gap text part (%s); merge to append instead", target, at)
			}
		}
	}
	if ctx.Selection != nil {
		ev.checkSelection(tap.Ptr(ptr, "value"), kind, val)
	}
	if len(ev.reasons) > mark {
		return
	}
	if kind == kindAnswer && ctx.Form != nil {
		// The host validates the effective answer against the form the
		// request asked for before serializing the MCP result.
		next := val
		if op == "merge" {
			next = mergeObject(cur, val)
		}
		for _, f := range formAnswerFaults(ctx.Form, next) {
			ev.reject(vocab.Edit4, tap.Ptr(ptr, "value"), "edit", "the edited elicitation content does not fit the requested form: %s", f)
		}
		if len(ev.reasons) > mark {
			return
		}
	}
	ev.stage(target, op, kind, cur, known, val)
}

// noSlotMessage explains a target a boundary does not define.
func noSlotMessage(event, target string) string {
	if event == "user.elicitation.request" && target == "request" {
		return "user.elicitation.request allows no modify(request): its MCP params are not a message-list target"
	}
	if target == "output" {
		return fmt.Sprintf("modify(output) edits only tool.after items, not %s", event)
	}
	var defined []string
	for t := range slots[event] {
		defined = append(defined, t)
	}
	if len(defined) == 0 {
		return fmt.Sprintf("%s defines no modify target, so modify(%s) is invalid there", event, target)
	}
	return fmt.Sprintf("modify(%s) is not defined at %s, which edits only %s", target, event, strings.Join(defined, ", "))
}

// targetIsList says whether the target is a list (ok false: not known).
func targetIsList(k valueKind, cur *tap.Value, known bool) (list, ok bool) {
	switch k {
	case kindMessages, kindTextParts:
		return true, true
	case kindObject, kindAnswer:
		return false, true
	}
	if known && cur != nil {
		return cur.Is(tap.Array), true
	}
	return false, false
}

// checkShape checks the value against the target's kind at this boundary.
// A value of the wrong kind (an object where a message list belongs, a
// list of parts where messages belong, or messages where text parts
// belong) is EDIT-4: it does not fit the target. A fault inside content of
// the right kind keeps the check, pointer and message it gets in an event
// (EDIT-1, EDIT-2): one fault, one ID, wherever the content sits.
func (ev *evaluation) checkShape(ptr, target string, kind valueKind, role string, val *tap.Value) {
	var misfits, content []problem
	switch kind {
	case kindMessages:
		misfits, content = listFit(ptr, target, val, kindMessages, func() []problem { return messageList(val, ptr, role) })
	case kindTextParts:
		misfits, content = listFit(ptr, target, val, kindTextParts, func() []problem { return textPartList(val, ptr) })
	case kindObject:
		if !val.Is(tap.Object) {
			misfits = []problem{{ptr: ptr, msg: fmt.Sprintf("modify(%s) needs an object value, found %s", target, val.Describe())}}
		}
	case kindAnswer:
		if !val.Is(tap.Object) {
			misfits = []problem{{ptr: ptr, msg: fmt.Sprintf("elicitation content is the MCP answer object of an accepted form result, not %s", val.Describe())}}
			break
		}
		for _, f := range mcpAnswerFaults(val) {
			misfits = append(misfits, problem{ptr: ptr + f.at, msg: "the MCP answer " + f.msg})
		}
	case kindMessagesOrAnswer:
		switch {
		case val.Is(tap.Array):
			misfits, content = listFit(ptr, target, val, kindMessages, func() []problem { return messageList(val, ptr, role) })
		case !val.Is(tap.Object):
			misfits = []problem{{ptr: ptr, msg: fmt.Sprintf("modify(content) needs a message list or an object, found %s", val.Describe())}}
		}
	}
	for _, p := range misfits {
		ev.reject(vocab.Edit4, p.ptr, "edit", "%s does not fit modify(%s): %s", valueWhere(ev.ctx.EventType), target, p.msg)
	}
	for _, p := range content {
		ev.reasons = append(ev.reasons, EditReason{Check: p.check, Pointer: p.ptr, Message: p.msg, Stage: "edit", older: p.older})
	}
}

// listFit splits the problems of a list-valued modify: misfits are the
// value or items of the wrong kind for the target (EDIT-4); content holds
// what the content validator (validate) finds in the items that fit,
// under their own checks. A misfit item's inner faults are not reported:
// the item does not belong there at all.
func listFit(ptr, target string, val *tap.Value, want valueKind, validate func() []problem) (misfits, content []problem) {
	if !val.Is(tap.Array) {
		return []problem{{ptr: ptr, msg: fmt.Sprintf("modify(%s) takes %s, found %s", target, want.describe(), val.Describe())}}, nil
	}
	var wrong map[string]bool
	for i, e := range val.Arr {
		var is string
		switch {
		case want == kindMessages && e.Is(tap.Object) && e.Has("kind") && !e.Has("parts"):
			is = "a content part"
		case want == kindTextParts && e.Is(tap.Object) && e.Has("parts") && !e.Has("kind"):
			is = "a message"
		default:
			continue
		}
		at := tap.Ptr(ptr, i)
		if wrong == nil {
			wrong = make(map[string]bool)
		}
		wrong[at] = true
		misfits = append(misfits, problem{ptr: at, msg: fmt.Sprintf("item %d is %s, but modify(%s) takes %s", i, is, target, want.describe())})
	}
	for _, p := range validate() {
		if wrong != nil && wrong[itemPointer(ptr, p.ptr)] {
			continue
		}
		content = append(content, p)
	}
	return misfits, content
}

// itemPointer is the pointer of the list item (directly below list) that
// p points into, or "" when p is not below list.
func itemPointer(list, p string) string {
	rest, ok := strings.CutPrefix(p, list+"/")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return list + "/" + rest
}

func valueWhere(event string) string {
	if event == "" {
		return "the value"
	}
	return "at " + event + ", the value"
}

// checkAttachments applies EDIT-3 to every attachment in a modify value:
// unchanged descriptors the event carried may stay; anything else is an
// attachment edit or a substituted reference (AHP-CONTENT-002).
func (ev *evaluation) checkAttachments(ptr string, val *tap.Value) {
	carried := make(map[string]bool, len(ev.ctx.Carried))
	refs := make(map[string]bool)
	ids := make(map[string]bool)
	for _, a := range ev.ctx.Carried {
		carried[string(a.Canonical())] = true
		if r, ok := a.Path("body", "ref").Text(); ok {
			refs[r] = true
		}
		if id, ok := a.Get("id").Text(); ok {
			ids[id] = true
		}
	}
	eachPart(val, ptr, func(p *tap.Value, at string) {
		if k, _ := p.Get("kind").Text(); k != "attachment" || carried[string(p.Canonical())] {
			return
		}
		id, _ := p.Get("id").Text()
		ref, hasRef := p.Path("body", "ref").Text()
		switch {
		case hasRef && refs[ref], ids[id]:
			ev.reject(vocab.Edit3, at, "edit", "attachment %q differs from the descriptor the event carried; attachments are immutable: keep it unchanged, remove or reorder it", id)
		case hasRef:
			ev.reject(vocab.Edit3, tap.Ptr(at, "body", "ref"), "edit", "attachment reference %q was not carried by the event; an edit may not substitute attachment references", ref)
		default:
			ev.reject(vocab.Edit3, at, "edit", "attachment %q was not carried by the event; an edit may keep, remove or reorder attachments, not add them", id)
		}
	})
}

// checkSelection applies EDIT-6's selection half: every part an edit
// brings in must belong to a body-selected category; inline text never
// bypasses selection.
func (ev *evaluation) checkSelection(ptr string, kind valueKind, val *tap.Value) {
	carried := make(map[string]bool, len(ev.ctx.Carried))
	for _, a := range ev.ctx.Carried {
		carried[string(a.Canonical())] = true
	}
	if kind == kindAnswer {
		if sel := selectionFor(ev.ctx.Selection, "text"); sel != "body" {
			ev.reject(vocab.Edit6, ptr, "edit", "the subscription selects elicitation text as %q, not body, so its content cannot be edited", sel)
		}
		return
	}
	eachPart(val, ptr, func(p *tap.Value, at string) {
		if carried[string(p.Canonical())] {
			return
		}
		cat := partCategory(p)
		if sel := selectionFor(ev.ctx.Selection, cat); sel != "body" {
			ev.reject(vocab.Edit6, at, "edit", "the subscription selects %s content as %q, not body, so an edit may not supply it inline", cat, sel)
		}
	})
}

// eachPart calls fn on every part of a message list or part list value.
func eachPart(val *tap.Value, ptr string, fn func(p *tap.Value, at string)) {
	for i, e := range val.Elems() {
		if parts := e.Get("parts"); parts != nil {
			for j, p := range parts.Elems() {
				fn(p, tap.Ptr(ptr, i, "parts", j))
			}
			continue
		}
		if e.Is(tap.Object) {
			fn(e, tap.Ptr(ptr, i))
		}
	}
}

// hiddenTextPart names the first metadata, omit or gap text part of a
// message or part list ("" when there is none).
func hiddenTextPart(list *tap.Value) string {
	found := ""
	eachPart(list, "", func(p *tap.Value, at string) {
		if k, _ := p.Get("kind").Text(); k != "text" || found != "" {
			return
		}
		sel, _ := p.Get("selection").Text()
		if sel == "metadata" || sel == "omit" || p.Has("gap") {
			id, _ := p.Get("id").Text()
			view := sel
			if p.Has("gap") {
				view = "gap"
			}
			found = fmt.Sprintf("%s part %q", view, id)
		}
	})
	return found
}

// partCategory is a part's selection category (§8): an explicit category
// wins; otherwise it follows the media type.
func partCategory(p *tap.Value) string {
	if c, ok := p.Get("category").Text(); ok && c != "" {
		return c
	}
	if k, _ := p.Get("kind").Text(); k == "text" {
		return "text"
	}
	mt, _ := p.Get("mediaType").Text()
	mt = strings.ToLower(mt)
	switch {
	case strings.HasPrefix(mt, "image/"):
		return "images"
	case strings.HasPrefix(mt, "audio/"):
		return "audio"
	case strings.HasPrefix(mt, "video/"):
		return "video"
	case strings.HasPrefix(mt, "text/"):
		return "text"
	}
	return "files"
}

// selectionFor is the selection of a category: its own key, else default.
func selectionFor(sel *tap.Value, category string) string {
	if s, ok := sel.Get(category).Text(); ok {
		return s
	}
	s, _ := sel.Get("default").Text()
	return s
}

// stage applies one valid modify over the staged candidate (EDIT-5):
// replace substitutes the whole target; list merge appends in order without
// de-duplication; object merge is shallow, replaces nested values whole and
// keeps literal null. Nothing reachable from the input is changed.
func (ev *evaluation) stage(target, op string, kind valueKind, cur *tap.Value, known bool, val *tap.Value) {
	if !slices.Contains(ev.edited, target) {
		ev.edited = append(ev.edited, target)
	}
	if op == "replace" {
		ev.setCandidate(target, val)
		ev.unknown = slices.DeleteFunc(ev.unknown, func(t string) bool { return t == target })
		return
	}
	if !known && cur == nil || slices.Contains(ev.unknown, target) {
		if !slices.Contains(ev.unknown, target) {
			ev.unknown = append(ev.unknown, target)
		}
		return
	}
	if val.Is(tap.Array) {
		ev.setCandidate(target, appendList(cur, val))
	} else {
		ev.setCandidate(target, mergeObject(cur, val))
	}
}

// appendList returns a new list: cur's elements, then val's, in order.
func appendList(cur, val *tap.Value) *tap.Value {
	return &tap.Value{Kind: tap.Array, Arr: slices.Concat(cur.Elems(), val.Arr)}
}

// mergeObject returns a new object: cur's members with val's laid over
// them one level deep. A member of val replaces cur's whole, null included.
func mergeObject(cur, val *tap.Value) *tap.Value {
	out := &tap.Value{Kind: tap.Object}
	at := make(map[string]int)
	put := func(m tap.Member) {
		if i, ok := at[m.Key]; ok {
			out.Obj[i].Val = m.Val
			return
		}
		at[m.Key] = len(out.Obj)
		out.Obj = append(out.Obj, m)
	}
	if cur.Is(tap.Object) {
		for _, m := range cur.Obj {
			put(m)
		}
	}
	for _, m := range val.Obj {
		put(m)
	}
	return out
}

// flaggedUnder reports whether the effect-list stage flagged ptr or a
// pointer below it.
func (ev *evaluation) flaggedUnder(ptr string) bool {
	for p := range ev.flagged {
		if p == ptr || strings.HasPrefix(p, ptr+"/") {
			return true
		}
	}
	return false
}

// listsString reports whether list is an array holding the string s.
func listsString(list *tap.Value, s string) bool {
	for _, e := range list.Elems() {
		if t, ok := e.Text(); ok && t == s {
			return true
		}
	}
	return false
}

// effectIndex is the index of the effect a pointer below EffectsPointer
// points into, or -1.
func effectIndex(ptr string) int {
	rest, ok := strings.CutPrefix(ptr, EffectsPointer+"/")
	if !ok {
		return -1
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return -1
	}
	return n
}
