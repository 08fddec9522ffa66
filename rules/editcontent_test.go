package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// One content fault gets one check, pointer and message wherever it sits:
// in an event's items, or inside a modify value (issue 12). In the edit the
// response is still rejected as a whole (EDIT-7), and EDIT-4 stays for
// values of the wrong kind for their target.
func TestContentFaultsInEventsAndEdits(t *testing.T) {
	hash := strings.Repeat("a", 64)
	tests := []struct {
		name    string
		part    string // a part of message m2, or a whole message when msg is set
		msg     bool
		check   string
		at      string // pointer below the part (or message)
		message string // a fact the message must state
	}{
		{"role on part", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","text":"x","role":"user"}`, false,
			"EDIT-1", "/role", `must not carry "role"`},
		{"parent on part", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","text":"x","parentId":"m1"}`, false,
			"EDIT-1", "/parentId", `must not carry "parentId"`},
		{"json kind", `{"id":"p","kind":"json","mediaType":"application/json","selection":"body","text":"{}"}`, false,
			"EDIT-2", "/kind", "no JSON part kind"},
		{"metadata text", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"metadata","text":"x"}`, false,
			"EDIT-2", "/text", "metadata and omit views carry no text"},
		{"omit body", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"omit","body":{"ref":"u"}}`, false,
			"EDIT-2", "/body", "metadata and omit views carry no body"},
		{"gap text", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","gap":{"reason":"r"},"text":"x"}`, false,
			"EDIT-2", "/text", "a gap view carries no text"},
		{"text as reference", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","body":{"ref":"u"}}`, false,
			"EDIT-2", "/body", "never replaced with a body reference"},
		{"reference with sha256", `{"id":"a9","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r9","sha256":"` + hash + `"}}`, false,
			"EDIT-2", "/body/sha256", "{ref} only"},
		{"json attachment", `{"id":"a9","kind":"attachment","mediaType":"application/json","selection":"body","body":{"ref":"r9"}}`, false,
			"EDIT-2", "/mediaType", "text and JSON content is a text part"},
		{"message without role", `{"id":"m2","parts":[` + textPartJSON("p", "x") + `]}`, true,
			"EDIT-1", "/role", `must carry "role"`},
	}
	for _, tt := range tests {
		msg := tt.part
		if !tt.msg {
			msg = `{"id":"m2","role":"tool","parts":[` + tt.part + `]}`
		}
		partPtr := "/0"
		if !tt.msg {
			partPtr = "/0/parts/0"
		}
		t.Run(tt.name+"/event", func(t *testing.T) {
			ev := `{"id":"e1","source":"urn:t","time":"2026-01-01T00:00:00Z","type":"tool.after","items":[` + msg + `]}`
			fs := runRules(tap.Config{Partial: true}, Default(Options{}), harnessFrame(observeJSON(ev)))
			wantOneAt(t, fs, tt.check, "/params/event/items"+partPtr+tt.at, tt.message)
			wantFindings(t, fs, "EDIT-4", 0)
		})
		t.Run(tt.name+"/edit", func(t *testing.T) {
			effects := `[{"type":"message","text":"kept?"},{"type":"modify","target":"output","operation":"merge","value":[` + msg + `]}]`
			fs := runRules(tap.Config{}, Default(Options{}),
				harnessFrame(interceptJSON(toolAfterEvent, toolAfterCaps)), backendFrame(resultJSON(effects)))
			wantOneAt(t, fs, tt.check, "/result/effects/1/value"+partPtr+tt.at, tt.message)
			wantFindings(t, fs, "EDIT-4", 0)
			// AHP-EDIT-001: the valid message effect must not be applied either.
			wantFindings(t, fs, "EDIT-7", 1)
		})
	}
	// The same values, conforming: no content finding in either place.
	good := msgJSON("m2", "tool", textPartJSON("p", "x"), `{"id":"p3","kind":"text","mediaType":"text/plain","selection":"metadata","size":1}`)
	ev := `{"id":"e1","source":"urn:t","time":"2026-01-01T00:00:00Z","type":"tool.after","items":[` + good + `]}`
	fs := runRules(tap.Config{Partial: true}, Default(Options{}), harnessFrame(observeJSON(ev)))
	for _, c := range []string{"EDIT-1", "EDIT-2", "EDIT-4"} {
		wantFindings(t, fs, c, 0)
	}
	effects := `[{"type":"message","text":"kept"},{"type":"modify","target":"output","operation":"merge","value":[` + good + `]}]`
	fs = runRules(tap.Config{}, Default(Options{}), harnessFrame(interceptJSON(toolAfterEvent, toolAfterCaps)), backendFrame(resultJSON(effects)))
	for _, c := range []string{"EDIT-1", "EDIT-2", "EDIT-4", "EDIT-7"} {
		wantFindings(t, fs, c, 0)
	}
}

// EDIT-4 stays for a value of the wrong kind for its target: an object
// where a message list belongs, bare parts for output, messages where text
// parts belong. The misfit item's own faults are not reported on top.
func TestEditValueKindMisfits(t *testing.T) {
	tests := []struct {
		name, event, caps, effect string
		at, message               string
	}{
		{"object for output", toolAfterEvent, toolAfterCaps,
			`{"type":"modify","target":"output","operation":"replace","value":{"id":"m2"}}`, "/result/effects/0/value", "takes a message list"},
		{"bare part for output", toolAfterEvent, toolAfterCaps,
			`{"type":"modify","target":"output","operation":"merge","value":[{"id":"p","kind":"json","role":"user"}]}`, "/result/effects/0/value/0", "item 0 is a content part"},
		{"message for summary", `{"id":"e1","source":"urn:t","time":"2026-01-01T00:00:00Z","type":"context.compact.after","summary":[]}`,
			`{"effects":["modify"],"modify":{"summary":{"merge":true}}}`,
			`{"type":"modify","target":"summary","operation":"merge","value":[` + msgJSON("m", "user", textPartJSON("p", "x")) + `]}`, "/result/effects/0/value/0", "item 0 is a message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{}, Default(Options{}), harnessFrame(interceptJSON(tt.event, tt.caps)), backendFrame(resultJSON(`[`+tt.effect+`]`)))
			wantOneAt(t, fs, "EDIT-4", tt.at, tt.message)
			for _, c := range []string{"EDIT-1", "EDIT-2"} {
				for _, f := range withCheck(fs, c) {
					if strings.HasPrefix(f.Pointer, "/result/") {
						t.Errorf("misfit value also reported under %s: %s", c, f)
					}
				}
			}
		})
	}
}

// wantOneAt fails unless exactly one finding sits at ptr, under check, and
// its message contains fact.
func wantOneAt(t *testing.T, fs []tap.Finding, check, ptr, fact string) {
	t.Helper()
	var at []tap.Finding
	for _, f := range fs {
		if f.Pointer == ptr {
			at = append(at, f)
		}
	}
	if len(at) != 1 || at[0].Check != check || !strings.Contains(at[0].Message, fact) {
		t.Errorf("findings at %s = %v, want one %s saying %q; all:%s", ptr, at, check, fact, dump(fs))
	}
}
