package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Issue 12: a shape an SDK pinned to an earlier draft puts on the wire keeps
// its finding (same check, same level); the conversation's first such
// finding adds one sentence naming the likely cause.
func TestOlderDraftHints(t *testing.T) {
	toolAfter := func(part string) string {
		return observeJS(eventJS("tool.after", tCall+`,"outcome":"ok","execution":{"status":"executed"},"items":[{"id":"m1","role":"tool","parts":[`+part+`]}]`))
	}
	hash := strings.Repeat("a", 64)
	tests := []struct {
		name    string
		frame   *tap.Frame
		check   string
		ptr     string
		older   string
		sender  string
		without *tap.Frame // the same frame, conforming
	}{
		{"size in a content reference",
			harnessFrame(toolAfter(`{"id":"a","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r","size":3}}`)),
			"EDIT-2", "/params/event/items/0/parts/0/body/size", "the draft before content receipts and shared events", "harness",
			harnessFrame(toolAfter(`{"id":"a","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r"}}`))},
		{"sha256 on a ready attachment part",
			harnessFrame(toolAfter(`{"id":"a","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r"},"sha256":"` + hash + `"}`)),
			"EDIT-2", "/params/event/items/0/parts/0/sha256", "the draft before content receipts and shared events", "harness",
			harnessFrame(toolAfter(`{"id":"a","kind":"attachment","mediaType":"image/png","selection":"metadata","sha256":"` + hash + `"}`))},
		{"text sent as an uploaded reference",
			harnessFrame(toolAfter(`{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","body":{"ref":"r"}}`)),
			"EDIT-2", "/params/event/items/0/parts/0/body", "the draft before canonical inline messages", "harness",
			harnessFrame(toolAfter(tTextPart))},
		{"message without a role",
			harnessFrame(observeJS(eventJS("tool.after", tCall+`,"outcome":"ok","execution":{"status":"executed"},"items":[{"id":"m1","parts":[`+tTextPart+`]}]`))),
			"EDIT-1", "/params/event/items/0/role", "the draft before canonical inline messages", "harness",
			harnessFrame(observeJS(eventJS("tool.after", tCall+`,"outcome":"ok","execution":{"status":"executed"},"items":[{"id":"m1","role":"tool","parts":[`+tTextPart+`]}]`)))},
		{"tool.callId",
			harnessFrame(observeJS(eventJS("tool.before", strings.Replace(tCall, `"origin":"native"`, `"origin":"native","callId":"c1"`, 1)))),
			"EVT-1", "/params/event/tool/callId", "the 0.1 revision", "harness",
			harnessFrame(observeJS(eventJS("tool.before", tCall)))},
		{"protocolVersion 0.1 from the harness",
			harnessFrame(strings.Replace(observeJS(eventJS("tool.before", tCall)), `"protocolVersion":"draft"`, `"protocolVersion":"0.1"`, 1)),
			"BASE-2", "/params/protocolVersion", "the 0.1 revision", "harness",
			harnessFrame(observeJS(eventJS("tool.before", tCall)))},
		{"size in a reference inside a modify value",
			backendFrame(resultJSON(`[{"type":"modify","target":"output","operation":"replace","value":[{"id":"m1","role":"tool","parts":[` +
				`{"id":"a1","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r1","size":3}}]}]}]`)),
			"EDIT-2", "/result/effects/0/value/0/parts/0/body/size", "the draft before content receipts and shared events", "backend",
			backendFrame(resultJSON(`[{"type":"modify","target":"output","operation":"replace","value":[{"id":"m1","role":"tool","parts":[` +
				`{"id":"a1","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"r1"}}]}]}]`))},
		{"mtls in the manifest's authentication",
			backendFrame(`{"jsonrpc":"2.0","id":"c1","result":{"protocolVersion":"draft","manifest":` + strings.Replace(tManifest, `"authentication":[]`, `"authentication":["bearer","mtls"]`, 1) + `}}`),
			"CAP-2", "/result/manifest/authentication/1", "the draft with mTLS and workload authentication", "backend",
			backendFrame(`{"jsonrpc":"2.0","id":"c1","result":{"protocolVersion":"draft","manifest":` + strings.Replace(tManifest, `"authentication":[]`, `"authentication":["bearer","oauth"]`, 1) + `}}`)},
		{"protocolVersion 0.1 from the backend",
			backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"0.1","effects":[]}}`),
			"BASE-2", "/result/protocolVersion", "the 0.1 revision", "backend",
			backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Partial: true}, Default(Options{}), tt.frame)
			var hit *tap.Finding
			for i, f := range fs {
				if f.Pointer == tt.ptr {
					if hit != nil {
						t.Fatalf("two findings at %s:%s", tt.ptr, dump(fs))
					}
					hit = &fs[i]
				}
			}
			if hit == nil || hit.Check != tt.check || hit.Level != tap.Error {
				t.Fatalf("finding at %s = %v, want one %s error:%s", tt.ptr, hit, tt.check, dump(fs))
			}
			sentence := "This shape matches " + tt.older + "; the " + tt.sender + "'s SDK may pin an older schema revision"
			if !strings.HasSuffix(hit.Message, sentence) || hit.OlderDraft != tt.older {
				t.Errorf("finding = %q (older %q), want it to end %q", hit.Message, hit.OlderDraft, sentence)
			}
			for _, f := range fs {
				if f.Pointer != tt.ptr && (f.OlderDraft != "" || strings.Contains(f.Message, "older schema revision")) {
					t.Errorf("a second finding carries the hint: %s", f)
				}
			}
			// The conforming frame: no finding at that place, no hint.
			for _, f := range runRules(tap.Config{Partial: true}, Default(Options{}), tt.without) {
				if f.Pointer == tt.ptr || f.OlderDraft != "" || strings.Contains(f.Message, "older schema revision") {
					t.Errorf("conforming frame: %s", f)
				}
			}
		})
	}
}

// The hint is given once per conversation, however many old shapes follow,
// and never for faults that are not old shapes.
func TestOlderDraftHintOncePerConversation(t *testing.T) {
	old := harnessFrame(observeJS(eventJS("tool.before", strings.Replace(tCall, `"origin":"native"`, `"origin":"native","callId":"c1"`, 1))))
	other := harnessFrame(observeJS(eventJS("tool.before", strings.Replace(tCall, `"origin":"native"`, `"origin":"plugin"`, 1))))
	fs := runRules(tap.Config{Partial: true}, Default(Options{}), other, old, harnessFrame(string(old.Raw)))
	hinted, callIDs := 0, 0
	for _, f := range fs {
		if f.OlderDraft != "" {
			hinted++
			if f.Seq != 2 {
				t.Errorf("hint on frame #%d, want the first old shape (#2): %s", f.Seq, f)
			}
		}
		if strings.HasSuffix(f.Pointer, "/tool/callId") {
			callIDs++
		}
	}
	if hinted != 1 || callIDs != 2 {
		t.Errorf("hinted %d, callId findings %d; want 1 and 2:%s", hinted, callIDs, dump(fs))
	}
	// A version that is not 0.1 is just another version: no hint.
	fs = runRules(tap.Config{Partial: true}, Default(Options{}),
		harnessFrame(strings.Replace(observeJS(eventJS("tool.before", tCall)), `"protocolVersion":"draft"`, `"protocolVersion":"2025-06"`, 1)))
	wantFindings(t, fs, "BASE-2", 1)
	for _, f := range fs {
		if f.OlderDraft != "" {
			t.Errorf("hint for protocolVersion 2025-06: %s", f)
		}
	}
}

// Issue 22: the fourth older state (mTLS and workload authentication, a
// nested content selection) is named in a registration's first finding of
// that shape; another fault is not hinted.
func TestOlderDraftHintRegistration(t *testing.T) {
	const hint = "This shape matches the draft with mTLS and workload authentication; the registration may follow an older schema revision"
	for _, c := range []struct {
		name, old, new, ptr string
	}{
		{"workload authentication", `"authentication":{"type":"bearer","tokenEnv":"AHP_POLICY_TOKEN"}`, `"authentication":{"type":"workload","profile":"spiffe"}`, "/hooks/0/authentication/type"},
		{"mtls upload auth", `"maxBytes":0}`, `"maxBytes":0,"auth":{"type":"mtls","certRef":"c"}}`, "/hooks/1/subscriptions/0/upload/auth/type"},
		{"nested categories", `"content":{"default":"omit"}`, `"content":{"default":"omit","categories":{"text":"body"}}`, "/hooks/1/subscriptions/0/content/categories"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := RegistrationFindings(mustParse(t, strings.Replace(validRegistration, c.old, c.new, 1)))
			if len(fs) != 1 || fs[0].Pointer != c.ptr || fs[0].Check != "BASE-5" || !strings.HasSuffix(fs[0].Message, hint) ||
				fs[0].OlderDraft != "the draft with mTLS and workload authentication" {
				t.Errorf("findings%s; want one BASE-5 at %s ending %q", dump(fs), c.ptr, hint)
			}
		})
	}
	// Two old shapes: the hint once. Another fault: no hint.
	two := strings.Replace(strings.Replace(validRegistration, `"type":"bearer","tokenEnv":"AHP_POLICY_TOKEN"`, `"type":"mtls"`, 1), `"content":{"default":"omit"}`, `"content":{"default":"omit","categories":{}}`, 1)
	hinted := 0
	for _, f := range RegistrationFindings(mustParse(t, two)) {
		if f.OlderDraft != "" {
			hinted++
		}
	}
	if hinted != 1 {
		t.Errorf("hinted %d findings, want 1", hinted)
	}
	for _, f := range RegistrationFindings(mustParse(t, strings.Replace(validRegistration, `"type":"bearer"`, `"type":"basic"`, 1))) {
		if f.OlderDraft != "" || strings.Contains(f.Message, "older schema") {
			t.Errorf("authentication type basic hinted: %s", f)
		}
	}
}
