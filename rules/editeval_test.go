package rules

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// jv parses JSON text for tests.
func jv(t testing.TB, s string) *tap.Value {
	t.Helper()
	v, _, err := tap.ParseJSON([]byte(s))
	if err != nil {
		t.Fatalf("test JSON %s: %v", s, err)
	}
	return v
}

// canon is a value's canonical JSON, for comparisons.
func canon(v *tap.Value) string { return string(v.Canonical()) }

func textPartJSON(id, text string) string {
	return `{"id":"` + id + `","kind":"text","mediaType":"text/plain","selection":"body","text":"` + text + `"}`
}

func msgJSON(id, role string, parts ...string) string {
	return `{"id":"` + id + `","role":"` + role + `","parts":[` + strings.Join(parts, ",") + `]}`
}

func reasonChecks(r EditResult) []string {
	var out []string
	for _, x := range r.Reasons {
		out = append(out, string(x.Check))
	}
	return out
}

func hasCheck(r EditResult, check string) bool {
	for _, x := range r.Reasons {
		if string(x.Check) == check {
			return true
		}
	}
	return false
}

// toolAfterCtx is a tool.after context whose output holds one message.
func toolAfterCtx(t *testing.T) EditContext {
	return EventEditContext(jv(t, `{"type":"tool.after","items":[`+msgJSON("m1", "tool", textPartJSON("p1", "result"))+`]}`), nil, nil)
}

func TestEvaluateDenyThenInvalidModifyRejectsBoth(t *testing.T) {
	ctx := toolAfterCtx(t)
	effects := jv(t, `[{"type":"deny","reason":"no"},{"type":"modify","target":"output","operation":"replace","value":"flat"}]`)
	r := EvaluateEdits(ctx, effects)
	if r.Accepted || r.Ends {
		t.Fatalf("EvaluateEdits(deny, bad modify) = accepted %v ends %v, want rejected and not ending", r.Accepted, r.Ends)
	}
	if !hasCheck(r, "EDIT-4") {
		t.Errorf("reasons = %v, want an EDIT-4 reason", reasonChecks(r))
	}
	// The same deny alone is accepted and ends the chain.
	ok := EvaluateEdits(ctx, jv(t, `[{"type":"deny","reason":"no"}]`))
	if !ok.Accepted || !ok.Ends {
		t.Errorf("EvaluateEdits(deny) = accepted %v ends %v, want accepted, ending", ok.Accepted, ok.Ends)
	}
}

func TestEvaluateInvalidEffectList(t *testing.T) {
	r := EvaluateEdits(toolAfterCtx(t), jv(t, `[{"type":"deny","reason":"no"},{"type":"grant"}]`))
	if r.Accepted || len(r.Reasons) == 0 || r.Reasons[0].Stage != "effects" {
		t.Errorf("EvaluateEdits(deny, unknown effect) = %+v, want rejected by the effect list stage", r)
	}
	r = EvaluateEdits(toolAfterCtx(t), jv(t, `{"type":"deny"}`))
	if r.Accepted {
		t.Errorf("EvaluateEdits(effects object) accepted, want rejected")
	}
	if r := EvaluateEdits(toolAfterCtx(t), jv(t, `[]`)); !r.Accepted || r.Effective != nil {
		t.Errorf("EvaluateEdits([]) = %+v, want accepted with nothing edited", r)
	}
}

func TestEvaluateChainRejectionInTheMiddle(t *testing.T) {
	ctx := toolAfterCtx(t)
	m2 := msgJSON("m2", "tool", textPartJSON("p2", "two"))
	m3 := msgJSON("m3", "tool", textPartJSON("p3", "three"))
	before := canon(ctx.Current["output"])
	rs := EvaluateChain(ctx, []*tap.Value{
		jv(t, `[{"type":"modify","target":"output","operation":"merge","value":[`+m2+`]}]`),
		jv(t, `[{"type":"message","text":"hi"},{"type":"modify","target":"output","operation":"merge","value":{"x":1}}]`),
		jv(t, `[{"type":"modify","target":"output","operation":"merge","value":[`+m3+`]}]`),
	})
	if !rs[0].Accepted || rs[1].Accepted || !rs[2].Accepted {
		t.Fatalf("EvaluateChain accepted = %v %v %v, want true false true (reasons %v)", rs[0].Accepted, rs[1].Accepted, rs[2].Accepted, rs[1].Reasons)
	}
	if !hasCheck(rs[1], "EDIT-5") {
		t.Errorf("middle reasons = %v, want EDIT-5 (object merged into a list)", reasonChecks(rs[1]))
	}
	got := rs[2].Effective["output"]
	var ids []string
	for _, m := range got.Elems() {
		id, _ := m.Get("id").Text()
		ids = append(ids, id)
	}
	if strings.Join(ids, ",") != "m1,m2,m3" {
		t.Errorf("effective output after chain = %v, want m1,m2,m3", ids)
	}
	if n := len(rs[0].Effective["output"].Elems()); n != 2 {
		t.Errorf("first response effective output has %d messages, want 2", n)
	}
	if canon(ctx.Current["output"]) != before {
		t.Errorf("EvaluateChain changed its input context")
	}
}

func TestEvaluateChainEndsAfterDeny(t *testing.T) {
	ctx := toolAfterCtx(t)
	rs := EvaluateChain(ctx, []*tap.Value{
		jv(t, `[{"type":"flow","operation":"stop","reason":"enough"}]`),
		jv(t, `[{"type":"message","text":"later"}]`),
	})
	if !rs[0].Ends || !rs[1].NotReached || rs[1].Accepted {
		t.Errorf("chain after stop = %+v, %+v; want the second response not reached", rs[0], rs[1])
	}
}

func TestEvaluateShallowObjectMerge(t *testing.T) {
	ev := jv(t, `{"type":"tool.before","tool":{"name":"x","input":{"a":{"x":1,"y":2},"b":1,"c":"keep"}}}`)
	ctx := EventEditContext(ev, nil, nil)
	before := canon(ev)
	effects := jv(t, `[{"type":"modify","target":"input","operation":"merge","value":{"a":{"x":9},"b":null,"d":true}}]`)
	r := EvaluateEdits(ctx, effects)
	if !r.Accepted {
		t.Fatalf("merge rejected: %v", r.Reasons)
	}
	want := `{"a":{"x":9},"b":null,"c":"keep","d":true}`
	if got := canon(r.Effective["input"]); got != want {
		t.Errorf("effective input = %s, want %s", got, want)
	}
	if canon(ev) != before {
		t.Errorf("EvaluateEdits changed the event")
	}
	// Replace substitutes the whole object.
	r = EvaluateEdits(ctx, jv(t, `[{"type":"modify","target":"input","operation":"replace","value":{"z":1}}]`))
	if got := canon(r.Effective["input"]); got != `{"z":1}` {
		t.Errorf("replace effective input = %s, want {\"z\":1}", got)
	}
	// Input needs an actual object target.
	noInput := EventEditContext(jv(t, `{"type":"tool.before","tool":{"name":"x","input":"raw"}}`), nil, nil)
	r = EvaluateEdits(noInput, jv(t, `[{"type":"modify","target":"input","operation":"merge","value":{"z":1}}]`))
	if r.Accepted || !hasCheck(r, "EDIT-4") {
		t.Errorf("merge over a non-object input: accepted %v reasons %v, want EDIT-4", r.Accepted, reasonChecks(r))
	}
}

func TestEvaluateAppendKeepsDuplicates(t *testing.T) {
	m1 := msgJSON("m1", "user", textPartJSON("p1", "hi"))
	ctx := EventEditContext(jv(t, `{"type":"turn.start","items":[`+m1+`]}`), nil, nil)
	r := EvaluateEdits(ctx, jv(t, `[{"type":"modify","target":"prompt","operation":"merge","value":[`+m1+`,`+m1+`]},
		{"type":"modify","target":"prompt","operation":"merge","value":[`+m1+`]}]`))
	if !r.Accepted {
		t.Fatalf("append rejected: %v", r.Reasons)
	}
	if n := len(r.Effective["prompt"].Elems()); n != 4 {
		t.Errorf("effective prompt has %d messages, want 4 (append never de-duplicates)", n)
	}
}

const (
	att1 = `{"id":"a1","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r1"}}`
	att2 = `{"id":"a2","kind":"attachment","mediaType":"application/pdf","selection":"body","body":{"ref":"r2"}}`
)

func TestEvaluateAttachments(t *testing.T) {
	ev := jv(t, `{"type":"turn.start","items":[`+msgJSON("m1", "user", textPartJSON("t1", "see"), att1, att2)+`]}`)
	ctx := EventEditContext(ev, nil, nil)
	tests := []struct {
		name  string
		parts string
		ok    bool
	}{
		{"remove and reorder", att2 + `,` + textPartJSON("t1", "changed text"), true},
		{"keep all", att1 + `,` + att2, true},
		{"content change", `{"id":"a1","kind":"attachment","mediaType":"image/jpeg","selection":"body","body":{"ref":"r1"}}`, false},
		{"reference substitution", `{"id":"a9","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"other"}}`, false},
		{"same id, other reference", `{"id":"a1","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r9"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			effects := jv(t, `[{"type":"modify","target":"prompt","operation":"replace","value":[`+msgJSON("m1", "user", tt.parts)+`]}]`)
			r := EvaluateEdits(ctx, effects)
			if r.Accepted != tt.ok {
				t.Fatalf("accepted = %v, want %v (reasons %v)", r.Accepted, tt.ok, r.Reasons)
			}
			if !tt.ok && !hasCheck(r, "EDIT-3") {
				t.Errorf("reasons = %v, want EDIT-3", reasonChecks(r))
			}
		})
	}
}

func TestEvaluateReplaceOverHiddenText(t *testing.T) {
	meta := `{"id":"t2","kind":"text","mediaType":"text/plain","selection":"metadata","size":12}`
	ev := jv(t, `{"type":"context.compact.before","trigger":"auto","items":[],"instructions":[`+textPartJSON("t1", "keep it short")+`,`+meta+`]}`)
	ctx := EventEditContext(ev, nil, nil)
	r := EvaluateEdits(ctx, jv(t, `[{"type":"modify","target":"instructions","operation":"replace","value":[`+textPartJSON("t3", "new")+`]}]`))
	if r.Accepted || !hasCheck(r, "EDIT-3") {
		t.Errorf("replace over a metadata part: accepted %v reasons %v, want EDIT-3", r.Accepted, reasonChecks(r))
	}
	r = EvaluateEdits(ctx, jv(t, `[{"type":"modify","target":"instructions","operation":"merge","value":[`+textPartJSON("t3", "new")+`]}]`))
	if !r.Accepted {
		t.Fatalf("merge over a metadata part rejected: %v", r.Reasons)
	}
	if got := r.Effective["instructions"].Elems(); len(got) != 3 || canon(got[1]) != canon(jv(t, meta)) {
		t.Errorf("merge effective instructions = %s, want the metadata part kept and the new part appended", canon(r.Effective["instructions"]))
	}
	// Without hidden parts a whole-list replace is fine.
	plain := EventEditContext(jv(t, `{"type":"context.compact.before","instructions":[`+textPartJSON("t1", "x")+`]}`), nil, nil)
	if r := EvaluateEdits(plain, jv(t, `[{"type":"modify","target":"instructions","operation":"replace","value":[]}]`)); !r.Accepted {
		t.Errorf("replace over body text rejected: %v", r.Reasons)
	}
}

func TestEvaluateCapabilitiesAndSelection(t *testing.T) {
	ev := jv(t, `{"type":"turn.start","items":[]}`)
	effects := jv(t, `[{"type":"modify","target":"prompt","operation":"merge","value":[`+msgJSON("m1", "user", textPartJSON("p", "x"))+`]}]`)
	tests := []struct {
		name      string
		caps, sel string
		ok        bool
		check     string // the check the rejection is reported under
	}{
		{"unknown capabilities", ``, ``, true, ""},
		{"advertised", `{"effects":["modify"],"modify":{"prompt":{"merge":true}}}`, ``, true, ""},
		{"replace only", `{"effects":["modify"],"modify":{"prompt":{"replace":true,"merge":false}}}`, ``, false, ""},
		{"other target", `{"effects":["modify"],"modify":{"request":{"merge":true}}}`, ``, false, ""},
		{"modify not in effects", `{"effects":["deny"],"modify":{"prompt":{"merge":true}}}`, ``, false, "BASE-9"},
		{"body selected", `{"effects":["modify"],"modify":{"prompt":{"merge":true}}}`, `{"default":"metadata","text":"body"}`, true, ""},
		{"text not body", `{"effects":["modify"],"modify":{"prompt":{"merge":true}}}`, `{"default":"body","text":"metadata"}`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var caps, sel *tap.Value
			if tt.caps != "" {
				caps = jv(t, tt.caps)
			}
			if tt.sel != "" {
				sel = jv(t, tt.sel)
			}
			r := EvaluateEdits(EventEditContext(ev, caps, sel), effects)
			if r.Accepted != tt.ok {
				t.Fatalf("accepted = %v, want %v (reasons %v)", r.Accepted, tt.ok, r.Reasons)
			}
			want := tt.check
			if want == "" {
				want = "EDIT-6"
			}
			if !tt.ok && !hasCheck(r, want) {
				t.Errorf("reasons = %v, want %s", reasonChecks(r), want)
			}
		})
	}
}

func TestEvaluateBoundaries(t *testing.T) {
	msgs := `[` + msgJSON("m1", "assistant", textPartJSON("p", "x")) + `]`
	tests := []struct {
		name, event, effect string
		want                string // "" accepted, else a reason check
	}{
		{"request at elicitation request", `{"type":"user.elicitation.request","elicitation":{"server":"s","mode":"form"}}`,
			`{"type":"modify","target":"request","operation":"replace","value":` + msgs + `}`, "EDIT-4"},
		{"output at tool.before", `{"type":"tool.before","tool":{"name":"t","input":{}}}`,
			`{"type":"modify","target":"output","operation":"replace","value":` + msgs + `}`, "EDIT-4"},
		{"outbound content list", `{"type":"user.message.outbound","message":{"channel":"c","messages":[]}}`,
			`{"type":"modify","target":"content","operation":"replace","value":` + msgs + `}`, ""},
		// A message of the wrong role is a message-list fault (EDIT-1), as
		// it is in the event's own message.messages; the list still fits.
		{"outbound content wrong role", `{"type":"user.message.outbound","message":{"channel":"c","messages":[]}}`,
			`{"type":"modify","target":"content","operation":"replace","value":[` + msgJSON("m1", "user", textPartJSON("p", "x")) + `]}`, "EDIT-1"},
		{"output as bare parts", `{"type":"tool.after","items":[]}`,
			`{"type":"modify","target":"output","operation":"merge","value":[` + textPartJSON("p", "x") + `]}`, "EDIT-4"},
		{"outbound content object", `{"type":"user.message.outbound","message":{"channel":"c","messages":[]}}`,
			`{"type":"modify","target":"content","operation":"replace","value":{"a":1}}`, "EDIT-4"},
		{"summary parts", `{"type":"context.compact.after","summary":[]}`,
			`{"type":"modify","target":"summary","operation":"merge","value":[` + textPartJSON("s", "x") + `]}`, ""},
		{"summary messages", `{"type":"context.compact.after","summary":[]}`,
			`{"type":"modify","target":"summary","operation":"merge","value":` + msgs + `}`, "EDIT-4"},
		{"workspace object", `{"type":"workspace.change.before","workspace":{"kind":"cwd","change":{"cwd":"/a"}}}`,
			`{"type":"modify","target":"workspace","operation":"merge","value":{"change":{"cwd":"/b"}}}`, ""},
		{"workspace list merge", `{"type":"workspace.change.before","workspace":{"kind":"cwd","change":{"cwd":"/a"}}}`,
			`{"type":"modify","target":"workspace","operation":"merge","value":[]}`, "EDIT-5"},
		{"no target at session.start", `{"type":"session.start","items":[]}`,
			`{"type":"modify","target":"prompt","operation":"merge","value":[]}`, "EDIT-4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := EvaluateEdits(EventEditContext(jv(t, tt.event), nil, nil), jv(t, `[`+tt.effect+`]`))
			if r.Accepted != (tt.want == "") {
				t.Fatalf("accepted = %v, want %v (reasons %v)", r.Accepted, tt.want == "", r.Reasons)
			}
			if tt.want != "" && !hasCheck(r, tt.want) {
				t.Errorf("reasons = %v, want %s", reasonChecks(r), tt.want)
			}
		})
	}
}

func TestEvaluateElicitationContent(t *testing.T) {
	ev := func(mode, action, result string) *tap.Value {
		return jv(t, `{"type":"user.elicitation.result","elicitation":{"server":"s","mode":"`+mode+`","action":"`+action+`","result":`+result+`}}`)
	}
	body := func(mcp string) string {
		b, _ := json.Marshal(mcp)
		return `{"id":"r","kind":"text","mediaType":"text/plain","selection":"body","text":` + string(b) + `}`
	}
	merge := jv(t, `[{"type":"modify","target":"content","operation":"merge","value":{"name":"new","n":2}}]`)
	r := EvaluateEdits(EventEditContext(ev("form", "accept", body(`{"action":"accept","content":{"name":"old","keep":true}}`)), nil, nil), merge)
	if !r.Accepted {
		t.Fatalf("accepted form merge rejected: %v", r.Reasons)
	}
	if got, want := canon(r.Effective["content"]), `{"keep":true,"n":2,"name":"new"}`; got != want {
		t.Errorf("effective content = %s, want %s", got, want)
	}
	for _, tt := range []struct{ name, mode, action, result, want string }{
		{"decline", "form", "decline", body(`{"action":"decline"}`), "EDIT-4"},
		{"url", "url", "accept", body(`{"action":"accept"}`), "EDIT-4"},
		{"metadata result", "form", "accept", `{"id":"r","kind":"text","mediaType":"text/plain","selection":"metadata"}`, "EDIT-6"},
	} {
		r := EvaluateEdits(EventEditContext(ev(tt.mode, tt.action, tt.result), nil, nil), merge)
		if r.Accepted || !hasCheck(r, tt.want) {
			t.Errorf("%s: accepted %v reasons %v, want %s", tt.name, r.Accepted, reasonChecks(r), tt.want)
		}
	}
	// A nested answer, or a null one, does not fit the MCP answer object.
	for _, v := range []string{`{"name":{"deep":1}}`, `{"name":null}`, `{"name":[1]}`} {
		bad := jv(t, `[{"type":"modify","target":"content","operation":"merge","value":`+v+`}]`)
		r = EvaluateEdits(EventEditContext(ev("form", "accept", body(`{"action":"accept","content":{}}`)), nil, nil), bad)
		if r.Accepted || !hasCheck(r, "EDIT-4") {
			t.Errorf("answer %s: accepted %v reasons %v, want EDIT-4", v, r.Accepted, reasonChecks(r))
		}
	}
}

func TestEvaluateWithoutContext(t *testing.T) {
	m := msgJSON("m1", "user", textPartJSON("p", "x"))
	r := EvaluateEdits(EditContext{}, jv(t, `[{"type":"modify","target":"prompt","operation":"replace","value":[`+m+`]},{"type":"modify","target":"input","operation":"merge","value":{"a":1}}]`))
	if !r.Accepted {
		t.Fatalf("context-free edits rejected: %v", r.Reasons)
	}
	if r.Effective["prompt"] == nil || r.Effective["input"] != nil || len(r.Unknown) != 1 || r.Unknown[0] != "input" {
		t.Errorf("context-free result = %+v, want prompt effective and input unknown", r)
	}
	r = EvaluateEdits(EditContext{}, jv(t, `[{"type":"modify","target":"instructions","operation":"replace","value":[`+m+`]}]`))
	if r.Accepted || !hasCheck(r, "EDIT-4") {
		t.Errorf("instructions as messages: accepted %v reasons %v, want EDIT-4", r.Accepted, reasonChecks(r))
	}
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"accepted":false`) {
		t.Errorf("json.Marshal(result) = %s, %v", b, err)
	}
}

func TestParseEditContext(t *testing.T) {
	ctx, err := ParseEditContext(jv(t, `{"event":"tool.after","current":{"output":[]},"mode":"","action":"","capabilities":{"effects":[]}}`))
	if err != nil || ctx.EventType != "tool.after" || !ctx.Known || ctx.Capabilities == nil {
		t.Errorf("ParseEditContext = %+v, %v", ctx, err)
	}
	for _, bad := range []string{`[]`, `{"current":{}}`, `{"event":"tool.after","current":[]}`} {
		if _, err := ParseEditContext(jv(t, bad)); err == nil {
			t.Errorf("ParseEditContext(%s) = nil error, want one", bad)
		}
	}
}
