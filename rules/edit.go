package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"fmt"
	"slices"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// The edit rules (EDIT-3…EDIT-8) report what the edit evaluator
// (editeval.go) and the elicitation checks find. Every rule reads one
// shared analysis of the frame (editAnalysis), computed once per frame:
// the evaluator runs once per response however many EDIT rules are on.

// editRules builds one rule per check; each reports only its check.
func editRules() []tap.Rule {
	return []tap.Rule{
		editRule(info("EDIT-3/attachments", vocab.Edit3, "attachments stay immutable references; no whole-list replace over metadata, omit or gap text parts")),
		editRule(info("EDIT-4/target", vocab.Edit4, "modify values fit the target and the boundary")),
		editRule(info("EDIT-5/semantics", vocab.Edit5, "merge value and target are the same kind; replace, append and shallow merge semantics")),
		editRule(info("EDIT-6/capability", vocab.Edit6, "an edit needs the exact advertised modify capability and body selection")),
		editRule(info("EDIT-7/atomic", vocab.Edit7, "one invalid effect rejects every effect in the response")),
		editRule(info("EDIT-8/elicitation", vocab.Edit8, "body-selected elicitation request/result text is complete MCP JSON that agrees with the envelope")),
	}
}

// editRule reports one check's problems from the shared edit analysis of
// a frame (see editAnalysis).
func editRule(ri tap.RuleInfo) tap.Rule {
	return analysisRule{info: ri, analyses: []*tap.Analysis{editAnalysis}}
}

// editAnalysis evaluates each frame's edits once and finds the problems of
// every EDIT-3…EDIT-8 check, and the content faults (EDIT-1, EDIT-2) inside
// modify values; it reads the shape walk so as not to repeat its problems.
var editAnalysis = problemAnalysis("edit", []vocab.CheckID{vocab.Edit1, vocab.Edit2, vocab.Edit3, vocab.Edit4, vocab.Edit5, vocab.Edit6, vocab.Edit7, vocab.Edit8},
	[]*tap.Analysis{shapeAnalysis}, analyseEdits)

func analyseEdits(c *tap.Conversation, f *tap.Frame) []problem {
	if f.Truncated || f.Tree == nil {
		return nil
	}
	switch m := f.Msg.(type) {
	case *tap.Request, *tap.Notification:
		// EDIT-8 judges events wherever they travel, intercepted or observed.
		if meth := f.Method(); meth == methodIntercept || meth == methodObserve {
			return elicitationProblems(forms(c), f.Event(), "/params/event")
		}
	case *tap.Response:
		if !m.Result.Is(tap.Object) || m.Error != nil || !m.Result.Has("effects") {
			return nil
		}
		effects := m.Result.Get("effects")
		ctx, ok := responseContext(c, hasModify(effects))
		if !ok {
			return nil
		}
		res := EvaluateEdits(ctx, effects)
		if x := c.Exchange(); x != nil {
			x.Edit = boxEdit(res) // the exchange record shows what a harness should apply
		} else {
			c.AddStandalone(&tap.Exchange{Key: tap.IDKey(m.ID), Method: methodIntercept, Response: f, Edit: res})
		}
		return responseProblems(res, m.Result.Get("effects"), frameProblems(c, f))
	}
	return nil
}

// Most responses edit nothing: an empty effect list, or a deny. Their
// results are these, boxed once (an EditResult in an interface costs an
// allocation per response otherwise; a type assertion copies it out, so
// the shared box is never written).
var (
	acceptedBox = any(EditResult{Accepted: true})
	endsBox     = any(EditResult{Accepted: true, Ends: true})
)

// boxEdit returns res in an interface, a shared one for the results most
// responses have.
func boxEdit(res EditResult) any {
	if res.Accepted && res.Effective == nil && res.Unknown == nil && res.Reasons == nil && !res.NotReached {
		if res.Ends {
			return endsBox
		}
		return acceptedBox
	}
	return res
}

// hasModify reports whether effects lists a modify effect: only those
// read the event's current values, attachments, selection and forms.
func hasModify(effects *tap.Value) bool {
	for _, e := range effects.Elems() {
		if t, _ := e.Get("type").Text(); t == "modify" {
			return true
		}
	}
	return false
}

// responseContext is the context a response is judged in: the request it
// answers when the stream holds it, else the --edit-context, else none
// (context-free checks only). ok is false for responses to requests other
// than hooks/intercept. Without modify effects (most responses: none, or
// a deny), the evaluator reads only the advertised capabilities, and the
// event's values are not gathered.
func responseContext(c *tap.Conversation, modify bool) (EditContext, bool) {
	if x := c.Exchange(); x != nil {
		if x.Method != methodIntercept {
			return EditContext{}, false
		}
		if !modify {
			return EventEditContext(nil, x.Capabilities, nil), true
		}
		var sel *tap.Value
		if c.Hook != nil && x.Subscription != nil {
			sel = x.Subscription.Get("content")
		}
		ctx := EventEditContext(x.Event, x.Capabilities, sel)
		ctx.Form = forms(c).formFor(x.Event)
		return ctx, true
	}
	if c.EditContext != nil {
		if ctx, err := ParseEditContext(c.EditContext); err == nil {
			return ctx, true
		}
	}
	return EditContext{}, true
}

// responseProblems turns an evaluation into the problems the EDIT rules
// report. Problems of the effect list as such belong to the effect and
// content rules (EFF-1, EDIT-1, EDIT-2) and BASE-9, which report them from
// the shared shape walk; an EDIT-4 shape problem that the walk already
// reported at the same place is not repeated. Content faults the evaluator
// finds inside a modify value (stage "edit") are reported under their own
// check, EDIT-1 or EDIT-2, by the content rules (contentRules). EDIT-7
// is one problem on the response, naming the effects an invalid edit takes
// down; when the effect list itself is invalid, EFF-1 already says so and
// names them.
func responseProblems(res EditResult, effects *tap.Value, shaped []problem) []problem {
	if res.Accepted {
		return nil
	}
	already := make(map[string]bool, len(shaped))
	for _, p := range shaped {
		already[p.ptr] = true
		already[string(p.check)+" "+p.ptr] = true
	}
	var out []problem
	invalid := make(map[int]bool)
	listFaults := false // the effect list as such is invalid: EFF-1 names what it takes down
	for _, r := range res.Reasons {
		if r.Stage == "effects" {
			listFaults = true
		}
		if i := effectIndex(r.Pointer); i >= 0 {
			invalid[i] = true
		}
		switch r.Check {
		case vocab.Edit3, vocab.Edit5, vocab.Edit6:
			out = append(out, problem{check: r.Check, ptr: r.Pointer, msg: r.Message})
		case vocab.Edit4:
			if !already[r.Pointer] {
				out = append(out, problem{check: r.Check, ptr: r.Pointer, msg: r.Message})
			}
		case vocab.Edit1, vocab.Edit2:
			if r.Stage == "edit" && !already[string(r.Check)+" "+r.Pointer] {
				out = append(out, problem{check: r.Check, ptr: r.Pointer, msg: r.Message, older: r.older})
			}
		}
	}
	var bad, taken []string
	for i, e := range effects.Elems() {
		typ, _ := e.Get("type").Text()
		if typ == "" {
			typ = "effect"
		}
		if invalid[i] {
			bad = append(bad, fmt.Sprintf("%d (%s)", i, typ))
		} else {
			taken = append(taken, fmt.Sprintf("%d (%s)", i, typ))
		}
	}
	if len(bad) > 0 && len(taken) > 0 && !listFaults {
		// AHP-EDIT-001, §4.6: the whole response is validated before any
		// change is published; one invalid effect rejects all of them.
		out = append(out, problem{check: vocab.Edit7, ptr: EffectsPointer, msg: fmt.Sprintf(
			"the response must be rejected as a whole: effect %s is invalid, so the valid effect %s must not be applied either",
			strings.Join(bad, ", "), strings.Join(taken, ", "))})
	}
	return out
}

// elicitationProblems applies EDIT-8 to an event: a body-selected
// elicitation request or result text part must hold complete MCP JSON
// that fits the pinned MCP 2025-11-25 contract and agrees with the
// envelope. Metadata, omit and gap views are never parsed.
func elicitationProblems(fm *formMemory, ev *tap.Value, ptr string) []problem {
	t, _ := ev.Get("type").Text()
	if t != "user.elicitation.request" && t != "user.elicitation.result" {
		return nil
	}
	el := ev.Get("elicitation")
	elPtr := tap.Ptr(ptr, "elicitation")
	mode, _ := el.Get("mode").Text()
	member, what := "request", "elicitation/create params"
	if t == "user.elicitation.result" {
		member, what = "result", "ElicitResult"
	}
	part := el.Get(member)
	text, ok := part.Get("text").Text()
	if sel, _ := part.Get("selection").Text(); sel != "body" || part.Has("gap") || !ok {
		return nil // AHP-CONTENT-001: metadata, omit and gap views are not payloads
	}
	textPtr := tap.Ptr(elPtr, member, "text")
	var out []problem
	add := func(p, format string, args ...any) {
		out = append(out, problem{check: vocab.Edit8, ptr: p, msg: fmt.Sprintf(format, args...)})
	}
	doc, faults := parseMCP(text)
	if doc == nil || !doc.Is(tap.Object) {
		for _, f := range faults {
			add(textPtr, "the elicitation %s text must be complete MCP %s JSON, but it %s", member, what, f.msg)
		}
		return out
	}
	if member == "request" {
		faults = append(faults, mcpRequestFaults(doc)...)
	} else {
		faults = append(faults, mcpResultFaults(doc)...)
	}
	for _, f := range faults {
		add(textPtr, "the elicitation %s text is not valid MCP 2025-11-25 %s: %s", member, what, f)
	}
	if member == "request" && len(faults) == 0 {
		fm.remember(ev, doc.Get("requestedSchema"))
	}
	if member == "request" {
		// MCP omits mode for a form request.
		parsed := "form"
		if m, ok := doc.Get("mode").Text(); ok {
			parsed = m
		}
		if mode != "" && slices.Contains([]string{"form", "url"}, parsed) && parsed != mode {
			add(tap.Ptr(elPtr, "mode"), "elicitation mode %q disagrees with the MCP request's mode %q (an omitted MCP mode means form)", mode, parsed)
		}
		return out
	}
	action, _ := el.Get("action").Text()
	if a, ok := doc.Get("action").Text(); ok && action != "" && a != action && slices.Contains([]string{"accept", "decline", "cancel"}, a) {
		add(tap.Ptr(elPtr, "action"), "elicitation action %q disagrees with the MCP result's action %q", action, a)
	}
	parsedAction, _ := doc.Get("action").Text()
	if doc.Has("content") && (action != "accept" || parsedAction != "accept" || mode != "form") {
		add(textPtr, "the MCP result carries content, which belongs only to an accepted form result; this one has mode %q and action %q", mode, action)
	} else if form := fm.formFor(ev); doc.Get("content").Is(tap.Object) && len(faults) == 0 {
		for _, f := range formAnswerFaults(form, doc.Get("content")) {
			add(textPtr, "the MCP result's content does not fit the form the request asked for: %s", f)
		}
	}
	return out
}

// formMemory remembers the requested form schema of each elicitation
// request seen, by event, so that the result event that names it as its
// parent can be checked against it. It keeps the latest maxForms.
type formMemory struct {
	order []string
	forms map[string]*tap.Value
}

const maxForms = 1024

// forms is the conversation's form memory.
func forms(c *tap.Conversation) *formMemory {
	return c.RuleState("edit/forms", func() any { return &formMemory{forms: make(map[string]*tap.Value)} }).(*formMemory)
}

func formKey(source, id string) string { return source + "\x00" + id }

func (fm *formMemory) remember(ev, schema *tap.Value) {
	id, _ := ev.Get("id").Text()
	src, _ := ev.Get("source").Text()
	if schema == nil || id == "" {
		return
	}
	k := formKey(src, id)
	if _, ok := fm.forms[k]; !ok {
		fm.order = append(fm.order, k)
	}
	fm.forms[k] = schema
	if len(fm.order) > maxForms {
		delete(fm.forms, fm.order[0])
		fm.order = fm.order[1:]
	}
}

// formFor is the requested form of the request an event's parentEventId
// names (same source), or nil.
func (fm *formMemory) formFor(ev *tap.Value) *tap.Value {
	parent, _ := ev.Get("parentEventId").Text()
	src, _ := ev.Get("source").Text()
	if fm == nil || parent == "" {
		return nil
	}
	return fm.forms[formKey(src, parent)]
}
