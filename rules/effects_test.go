package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func resultJS(effects string) string {
	return `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":` + effects + `}}`
}

func TestEffects(t *testing.T) {
	tests := []struct {
		name    string
		effects string
		want    int // EFF-1 findings
	}{
		{"empty", `[]`, 0},
		{"deny", `[{"type":"deny","reason":"no","code":"com.example.x","extensions":{"com.example":1}}]`, 0},
		{"two denies", `[{"type":"deny","reason":"a"},{"type":"deny","reason":"b"}]`, 0},
		{"allow ask message", `[{"type":"allow"},{"type":"ask"},{"type":"message","text":""}]`, 0},
		{"modify", `[{"type":"modify","target":"input","operation":"merge","value":{"a":null}}]`, 0},
		{"return null", `[{"type":"return","value":null}]`, 0},
		{"flow stop and continue", `[{"type":"flow","operation":"stop","reason":"done"},{"type":"flow","operation":"continue"},{"type":"flow","operation":"continue","instruction":"go on"}]`, 0},
		{"inject", `[{"type":"inject","target":"context","operation":"append","deliverAt":"now","value":` + tMsgs + `}]`, 0},

		{"deny without reason", `[{"type":"deny"}]`, 1},
		{"deny empty reason", `[{"type":"deny","reason":""}]`, 1},
		{"deny extra field", `[{"type":"deny","reason":"r","message":"m"}]`, 1},
		{"allow extra field", `[{"type":"allow","reason":"r"}]`, 1},
		{"modify bad target", `[{"type":"modify","target":"tool","operation":"replace","value":{}}]`, 1},
		{"modify bad operation", `[{"type":"modify","target":"input","operation":"patch","value":{}}]`, 1},
		{"modify no value", `[{"type":"modify","target":"input","operation":"replace"}]`, 1},
		{"modify path", `[{"type":"modify","target":"input","operation":"replace","value":{},"path":"/a"}]`, 1},
		{"message text number", `[{"type":"message","text":1}]`, 1},
		{"return no value", `[{"type":"return"}]`, 1},
		{"flow no operation", `[{"type":"flow","reason":"x"}]`, 1},
		{"flow bad operation", `[{"type":"flow","operation":"pause"}]`, 1},
		{"stop no reason", `[{"type":"flow","operation":"stop"}]`, 1},
		{"continue empty instruction", `[{"type":"flow","operation":"continue","instruction":""}]`, 1},
		{"continue with reason", `[{"type":"flow","operation":"continue","reason":"x"}]`, 1},
		{"inject wrong operation", `[{"type":"inject","target":"context","operation":"replace","deliverAt":"now","value":[]}]`, 1},
		{"inject wrong deliverAt", `[{"type":"inject","target":"context","operation":"append","deliverAt":"later","value":[]}]`, 1},
		{"unknown type", `[{"type":"grant"}]`, 1},
		{"extension type", `[{"type":"com.example.grant"}]`, 1},
		{"type missing", `[{"reason":"x"}]`, 1},
		{"effect not object", `["deny"]`, 1},
		{"effects not array", `{"type":"deny","reason":"x"}`, 1},
		// §4.6: one bad effect rejects the rest, reported once more on the list.
		{"atomic unknown", `[{"type":"message","text":"hi"},{"type":"unknown"}]`, 2},
		{"atomic two bad", `[{"type":"deny","reason":"x"},{"type":"ask","x":1},{"type":"flow"}]`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := shapeFindings(backendFrame(resultJS(tt.effects)))
			wantFindings(t, fs, "EFF-1", tt.want)
			if tt.want == 0 && len(fs) > 0 {
				t.Errorf("unexpected findings:%s", dump(fs))
			}
		})
	}
}

func TestEffectsAtomicMessage(t *testing.T) {
	ps := effectProblems(mustParse(t, `[{"type":"deny","reason":"x"},{"type":"nope"}]`), "/result/effects")
	if len(ps) != 2 {
		t.Fatalf("effectProblems = %s, want 2", showProblems(ps))
	}
	sum := ps[1]
	if sum.ptr != "/result/effects" || !strings.Contains(sum.msg, "#0 deny") || !strings.Contains(sum.msg, "#1 nope") || !strings.Contains(sum.msg, "invalid effect #1") {
		t.Errorf("summary = %s %q, want it at /result/effects naming #0 deny and #1 nope", sum.ptr, sum.msg)
	}
	if ps[0].ptr != "/result/effects/1/type" {
		t.Errorf("problem pointer = %s, want /result/effects/1/type", ps[0].ptr)
	}
}

func TestEffectsInjectContent(t *testing.T) {
	fs := shapeFindings(backendFrame(resultJS(`[{"type":"inject","target":"context","operation":"append","deliverAt":"next_turn","value":[` + tTextPart + `]}]`)))
	wantFindings(t, fs, "EDIT-1", 1)
	wantFindings(t, fs, "EFF-1", 0)
}

func TestInterceptResult(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		check string
		want  int
	}{
		{"effects missing", `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`, "EFF-1", 1},
		{"manifest in intercept result", `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[],"manifest":{}}}`, "CAP-2", 1},
		{"error response is not checked", `{"jsonrpc":"2.0","id":"e1","error":{"code":-32003,"message":"busy"}}`, "EFF-1", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantFindings(t, shapeFindings(backendFrame(tt.frame)), tt.check, tt.want)
		})
	}
}

// TestExchangeMethod: a response is judged by the request it answers.
func TestExchangeMethod(t *testing.T) {
	req := harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`)
	// A capabilities result without a manifest is CAP-2, not a missing "effects".
	fs := runRules(tap.Config{}, shapeRulesOnly(), req, backendFrame(`{"jsonrpc":"2.0","id":"d","result":{"protocolVersion":"draft"}}`))
	wantFindings(t, fs, "CAP-2", 1)
	wantFindings(t, fs, "EFF-1", 0)

	req = harnessFrame(interceptJS(eventJS("tool.before", minimalPayloads["tool.before"]), `{"effects":["deny"]}`))
	fs = runRules(tap.Config{}, shapeRulesOnly(), req, backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","manifest":{}}}`))
	wantFindings(t, fs, "CAP-2", 1)
	wantFindings(t, fs, "EFF-1", 1)
}
