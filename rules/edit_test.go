package rules

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func interceptJSON(event, caps string) string {
	return `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":` + event + `,"capabilities":` + caps + `}}`
}

func resultJSON(effects string) string {
	return `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":` + effects + `}}`
}

func observeJSON(event string) string {
	return `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":` + event + `}}`
}

// editFindings keeps the findings of the EDIT-3…EDIT-8 checks.
func editFindings(fs []tap.Finding) []tap.Finding {
	var out []tap.Finding
	for _, f := range fs {
		if slices.Contains([]string{"EDIT-3", "EDIT-4", "EDIT-5", "EDIT-6", "EDIT-7", "EDIT-8"}, f.Check) {
			out = append(out, f)
		}
	}
	return out
}

const toolAfterEvent = `{"id":"e1","source":"urn:t","time":"2026-01-01T00:00:00Z","type":"tool.after","items":[` +
	`{"id":"m1","role":"tool","parts":[{"id":"p1","kind":"text","mediaType":"text/plain","selection":"body","text":"result"},` +
	`{"id":"a1","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r1"}}]}]}`

const toolAfterCaps = `{"effects":["deny","modify","message"],"modify":{"output":{"replace":true,"merge":true}}}`

func TestEditRulesOnResponses(t *testing.T) {
	goodMsg := msgJSON("m2", "tool", textPartJSON("p2", "more"))
	tests := []struct {
		name    string
		effects string
		want    map[string]int
	}{
		{"append", `[{"type":"modify","target":"output","operation":"merge","value":[` + goodMsg + `]}]`, nil},
		{"deny then invalid modify", `[{"type":"deny","reason":"no"},{"type":"modify","target":"output","operation":"replace","value":"flat"}]`,
			// EDIT-4 is ours only while the shared shape walk does not
			// already report the value's shape at that place.
			map[string]int{"EDIT-7": 1, "EDIT-4": -1}},
		// An effect the effect list itself rejects (EFF-1 names the
		// effects it takes down): no second summary under EDIT-7.
		{"deny then closed-object violation", `[{"type":"deny","reason":"no"},{"type":"modify","target":"output","operation":"merge","value":[],"path":"/0"}]`, nil},
		{"object merged into list", `[{"type":"modify","target":"output","operation":"merge","value":{"a":1}}]`, map[string]int{"EDIT-5": 1}},
		{"reference substitution", `[{"type":"modify","target":"output","operation":"replace","value":[{"id":"m1","role":"tool","parts":[` +
			`{"id":"a1","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"elsewhere"}}]}]}]`, map[string]int{"EDIT-3": 1}},
		{"attachment removed and kept", `[{"type":"modify","target":"output","operation":"replace","value":[{"id":"m1","role":"tool","parts":[` +
			`{"id":"a1","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r1"}}]}]}]`, nil},
		{"unadvertised target", `[{"type":"modify","target":"prompt","operation":"merge","value":[]}]`, map[string]int{"EDIT-4": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{}, editRules(),
				harnessFrame(interceptJSON(toolAfterEvent, toolAfterCaps)), backendFrame(resultJSON(tt.effects)))
			got := map[string]int{}
			for _, f := range editFindings(fs) {
				got[f.Check]++
			}
			for _, c := range []string{"EDIT-3", "EDIT-4", "EDIT-5", "EDIT-6", "EDIT-7", "EDIT-8"} {
				if w := tt.want[c]; w >= 0 && got[c] != w {
					t.Errorf("findings for %s = %d, want %d:%s", c, got[c], tt.want[c], dump(fs))
				}
			}
		})
	}
}

func TestEditCapabilityFinding(t *testing.T) {
	caps := `{"effects":["modify"],"modify":{"output":{"replace":true}}}`
	effects := `[{"type":"modify","target":"output","operation":"merge","value":[]}]`
	fs := runRules(tap.Config{}, editRules(), harnessFrame(interceptJSON(toolAfterEvent, caps)), backendFrame(resultJSON(effects)))
	wantFindings(t, fs, "EDIT-6", 1)
	caps = `{"effects":["modify"],"modify":{"output":{"merge":true}}}`
	fs = runRules(tap.Config{}, editRules(), harnessFrame(interceptJSON(toolAfterEvent, caps)), backendFrame(resultJSON(effects)))
	wantFindings(t, fs, "EDIT-6", 0)
}

// A registration whose subscription selects text as metadata: an edit may
// not bring text in inline (EDIT-6).
func TestEditSelectionFinding(t *testing.T) {
	reg := func(text string) *tap.Value {
		return jv(t, `{"protocolVersion":"draft","hooks":[{"id":"b","transport":{"type":"stdio","command":"x","lifecycle":"persistent"},`+
			`"subscriptions":[{"events":["tool.after"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-open","content":{"default":"body","text":"`+text+`"}}]}]}`)
	}
	effects := `[{"type":"modify","target":"output","operation":"merge","value":[` + msgJSON("m2", "tool", textPartJSON("p2", "x")) + `]}]`
	for _, tt := range []struct {
		text string
		want int
	}{{"metadata", 1}, {"body", 0}} {
		cfg := tap.Config{Registration: reg(tt.text), HookID: "b"}
		fs := runRules(cfg, editRules(), harnessFrame(interceptJSON(toolAfterEvent, toolAfterCaps)), backendFrame(resultJSON(effects)))
		wantFindings(t, fs, "EDIT-6", tt.want)
	}
}

// The exchange record carries the evaluator's verdict.
func TestEditExchangeRecord(t *testing.T) {
	e := tap.NewEngine(tap.Config{}, editRules())
	e.Feed(harnessFrame(interceptJSON(toolAfterEvent, toolAfterCaps)))
	e.Feed(backendFrame(resultJSON(`[{"type":"modify","target":"output","operation":"merge","value":[` + msgJSON("m2", "tool", textPartJSON("p2", "x")) + `]}]`)))
	x := e.Conversation().Answered(tap.IDKey(jv(t, `"e1"`)))
	if x == nil {
		t.Fatal("no answered exchange e1")
	}
	r, ok := x.Edit.(EditResult)
	if !ok || !r.Accepted || len(r.Effective["output"].Elems()) != 2 {
		t.Fatalf("exchange Edit = %#v, want an accepted result with two output messages", x.Edit)
	}
	b, _ := json.Marshal(x.Edit)
	if !strings.Contains(string(b), `"effective":{"output":[`) {
		t.Errorf("json of the exchange record = %s, want the effective output", b)
	}
}

// The live path (request + response through an engine) and a standalone
// response with the equivalent --edit-context give the same findings.
func TestEditLiveMatchesEditContext(t *testing.T) {
	effects := []string{
		`[{"type":"modify","target":"output","operation":"merge","value":[` + msgJSON("m2", "tool", textPartJSON("p2", "x")) + `]}]`,
		`[{"type":"message","text":"hi"},{"type":"modify","target":"output","operation":"merge","value":{"a":1}}]`,
		`[{"type":"modify","target":"output","operation":"replace","value":[{"id":"m1","role":"tool","parts":[{"id":"a1","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"zz"}}]}]}]`,
		`[{"type":"modify","target":"output","operation":"replace","value":[{"id":"p1","kind":"text","mediaType":"text/plain","selection":"body","text":"x"}]}]`,
		`[{"type":"modify","target":"input","operation":"merge","value":{}}]`,
		`[{"type":"deny","reason":"x"},{"type":"modify","target":"output","operation":"merge","value":"x"}]`,
	}
	ev := jv(t, toolAfterEvent)
	editCtx := `{"event":"tool.after","current":{"output":` + canon(ev.Get("items")) + `},"mode":"","action":"","capabilities":` + toolAfterCaps + `}`
	key := func(fs []tap.Finding) []string {
		var out []string
		for _, f := range editFindings(fs) {
			out = append(out, f.Check+" "+f.Pointer+" "+f.Message)
		}
		return out
	}
	for i, eff := range effects {
		live := runRules(tap.Config{}, Default(Options{}), harnessFrame(interceptJSON(toolAfterEvent, toolAfterCaps)), backendFrame(resultJSON(eff)))
		// Only the response's findings: the request has its own.
		var liveResp []tap.Finding
		for _, f := range live {
			if f.Dir == tap.FromBackend {
				liveResp = append(liveResp, f)
			}
		}
		standalone := CheckDocument("response.json", []byte(resultJSON(eff)), tap.Config{EditContext: jv(t, editCtx)}, Options{})
		if a, b := key(liveResp), key(standalone); !slices.Equal(a, b) {
			t.Errorf("case %d: live findings %q, --edit-context findings %q", i, a, b)
		}
		// A stdio capture file holding both lines takes the live path too.
		stream := CheckDocument("pair.jsonl", []byte(interceptJSON(toolAfterEvent, toolAfterCaps)+"\n"+resultJSON(eff)+"\n"), tap.Config{}, Options{})
		var streamResp []tap.Finding
		for _, f := range stream {
			if f.Seq == 2 {
				streamResp = append(streamResp, f)
			}
		}
		if a, b := key(liveResp), key(streamResp); !slices.Equal(a, b) {
			t.Errorf("case %d: live findings %q, stream file findings %q", i, a, b)
		}
		if i > 0 && len(key(liveResp)) == 0 {
			t.Errorf("case %d: no EDIT finding on a response that should be rejected", i)
		}
	}
}

// Without any context only context-free checks run: a merge of an object
// into prompt is still wrong, but a modify of output at an unknown
// boundary is not.
func TestEditStandaloneWithoutContext(t *testing.T) {
	fs := CheckDocument("r.json", []byte(resultJSON(`[{"type":"modify","target":"prompt","operation":"merge","value":{"a":1}}]`)), tap.Config{}, Options{})
	wantFindings(t, fs, "EDIT-5", 1)
	fs = CheckDocument("r.json", []byte(resultJSON(`[{"type":"modify","target":"output","operation":"merge","value":[]}]`)), tap.Config{}, Options{})
	if got := editFindings(fs); len(got) != 0 {
		t.Errorf("context-free output merge: %s", dump(got))
	}
}

func elicitationEvent(typ, elicitation string) string {
	return `{"id":"e1","source":"urn:t","time":"2026-01-01T00:00:00Z","type":"` + typ + `","elicitation":` + elicitation + `}`
}

func mcpPart(selection, mcp string) string {
	b, _ := json.Marshal(mcp)
	if selection != "body" {
		return `{"id":"x","kind":"text","mediaType":"text/plain","selection":"` + selection + `"}`
	}
	return `{"id":"x","kind":"text","mediaType":"text/plain","selection":"body","text":` + string(b) + `}`
}

func TestElicitationPayloads(t *testing.T) {
	form := `{"message":"Pick","requestedSchema":{"type":"object","properties":{"answer":{"type":"string"},"n":{"type":"integer","minimum":1},"c":{"type":"string","enum":["a","b"]}},"required":["answer"]}}`
	tests := []struct {
		name, typ, el string
		want          int
	}{
		{"form with omitted mode", "user.elicitation.request", `{"server":"s","mode":"form","request":` + mcpPart("body", form) + `}`, 0},
		{"omitted mode under url envelope", "user.elicitation.request", `{"server":"s","mode":"url","request":` + mcpPart("body", form) + `}`, 1},
		{"url request", "user.elicitation.request", `{"server":"s","mode":"url","request":` + mcpPart("body", `{"mode":"url","message":"go","elicitationId":"1","url":"https://example.com/x"}`) + `}`, 0},
		{"url request without url", "user.elicitation.request", `{"server":"s","mode":"url","request":` + mcpPart("body", `{"mode":"url","message":"go","elicitationId":"1"}`) + `}`, 1},
		{"nested form field", "user.elicitation.request", `{"server":"s","mode":"form","request":` + mcpPart("body", `{"message":"m","requestedSchema":{"type":"object","properties":{"o":{"type":"object","properties":{}}}}}`) + `}`, 1},
		{"not JSON", "user.elicitation.request", `{"server":"s","mode":"form","request":` + mcpPart("body", `{"message":`) + `}`, 1},
		{"metadata view not parsed", "user.elicitation.request", `{"server":"s","mode":"form","request":` + mcpPart("metadata", "") + `}`, 0},
		{"gap view not parsed", "user.elicitation.request", `{"server":"s","mode":"form","request":{"id":"x","kind":"text","mediaType":"text/plain","selection":"body","gap":{"reason":"too big"}}}`, 0},
		{"accepted form result", "user.elicitation.result", `{"server":"s","mode":"form","action":"accept","result":` + mcpPart("body", `{"action":"accept","content":{"answer":"yes","tags":["a"]}}`) + `}`, 0},
		{"mismatched action", "user.elicitation.result", `{"server":"s","mode":"form","action":"accept","result":` + mcpPart("body", `{"action":"decline"}`) + `}`, 1},
		{"content on a decline", "user.elicitation.result", `{"server":"s","mode":"form","action":"decline","result":` + mcpPart("body", `{"action":"decline","content":{"answer":"yes"}}`) + `}`, 1},
		{"content on url accept", "user.elicitation.result", `{"server":"s","mode":"url","action":"accept","result":` + mcpPart("body", `{"action":"accept","content":{}}`) + `}`, 1},
		{"bad answer value", "user.elicitation.result", `{"server":"s","mode":"form","action":"accept","result":` + mcpPart("body", `{"action":"accept","content":{"a":{"b":1}}}`) + `}`, 1},
		{"omit result not parsed", "user.elicitation.result", `{"server":"s","mode":"form","action":"accept","result":` + mcpPart("omit", "") + `}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := elicitationEvent(tt.typ, tt.el)
			fs := runRules(tap.Config{Partial: true}, editRules(), harnessFrame(observeJSON(ev)))
			wantFindings(t, fs, "EDIT-8", tt.want)
			fs = runRules(tap.Config{Partial: true}, editRules(), harnessFrame(interceptJSON(ev, `{"effects":["deny"]}`)))
			wantFindings(t, fs, "EDIT-8", tt.want)
		})
	}
}

// A result event is checked against the form its parent request asked for,
// and so is an edit of its content.
func TestElicitationResultFitsRequestedForm(t *testing.T) {
	form := `{"message":"Pick","requestedSchema":{"type":"object","properties":{"answer":{"type":"string","enum":["yes","no"]},"n":{"type":"integer"},"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}},"required":["answer"]}}`
	request := `{"id":"req1","source":"urn:t","time":"2026-01-01T00:00:00Z","type":"user.elicitation.request","elicitation":{"server":"s","mode":"form","request":` + mcpPart("body", form) + `}}`
	result := func(content string) string {
		return `{"id":"e1","source":"urn:t","time":"2026-01-01T00:00:01Z","type":"user.elicitation.result","parentEventId":"req1",` +
			`"elicitation":{"server":"s","mode":"form","action":"accept","result":` + mcpPart("body", `{"action":"accept","content":`+content+`}`) + `}}`
	}
	for _, tt := range []struct {
		content string
		want    int
	}{
		{`{"answer":"yes","n":2,"tags":["a"],"extra":"free"}`, 0},
		{`{"n":2}`, 1},
		{`{"answer":"maybe"}`, 1},
		{`{"answer":"no","n":1.5}`, 1},
		{`{"answer":"no","tags":["b"]}`, 1},
	} {
		fs := runRules(tap.Config{Partial: true}, editRules(), harnessFrame(observeJSON(request)), harnessFrame(observeJSON(result(tt.content))))
		wantFindings(t, fs, "EDIT-8", tt.want)
	}
	caps := `{"effects":["modify","message"],"modify":{"content":{"merge":true,"replace":true}}}`
	for _, tt := range []struct {
		value string
		want  int
	}{{`{"answer":"no"}`, 0}, {`{"answer":"maybe"}`, 1}, {`{"n":3}`, 0}} {
		fs := runRules(tap.Config{}, editRules(), harnessFrame(observeJSON(request)),
			harnessFrame(interceptJSON(result(`{"answer":"yes"}`), caps)),
			backendFrame(resultJSON(`[{"type":"modify","target":"content","operation":"merge","value":`+tt.value+`}]`)))
		wantFindings(t, fs, "EDIT-4", tt.want)
	}
}
