package rules

import (
	"strings"
	"testing"
)

func TestInterceptCapabilities(t *testing.T) {
	tb := eventJS("tool.before", minimalPayloads["tool.before"])
	ta := eventJS("tool.after", minimalPayloads["tool.after"])
	ss := eventJS("session.start", minimalPayloads["session.start"])
	tests := []struct {
		name  string
		frame string
		want  int // CAP-1 findings
	}{
		{"deny only", interceptJS(tb, `{"effects":["deny"]}`), 0},
		{"full tool.before", interceptJS(tb, `{"effects":["deny","allow","ask","modify","inject","flow","return","message","com.example.audit"],`+
			`"modify":{"input":{"replace":true,"merge":false}},"flow":{"operations":["stop"]},"inject":{"context":{"append":true,"deliverAt":["now","next_turn"]}},"elicitation":{"form":{}},"x-unknown":1}`), 0},
		{"continue at tool.after", interceptJS(ta, `{"effects":["flow"],"flow":{"operations":["stop","continue"],"remainingContinuations":2,"continuationCount":0,"maxContinuations":2}}`), 0},
		{"capabilities missing", strings.Replace(interceptJS(tb, `{}`), `,"capabilities":{}`, ``, 1), 1},
		{"effects missing", interceptJS(tb, `{}`), 1},
		{"effects not array", interceptJS(tb, `{"effects":"deny"}`), 1},
		{"effects duplicate", interceptJS(tb, `{"effects":["deny","deny"]}`), 1},
		{"tool.before without deny", interceptJS(tb, `{"effects":["message"]}`), 1},
		{"modify without block", interceptJS(tb, `{"effects":["deny","modify"]}`), 1},
		{"block without modify", interceptJS(tb, `{"effects":["deny"],"modify":{"input":{"replace":true,"merge":true}}}`), 1},
		{"flow without block", interceptJS(tb, `{"effects":["deny","flow"]}`), 1},
		{"inject without block", interceptJS(tb, `{"effects":["deny","inject"]}`), 1},
		{"modify empty", interceptJS(tb, `{"effects":["deny","modify"],"modify":{}}`), 1},
		{"modify neither operation", interceptJS(tb, `{"effects":["deny","modify"],"modify":{"input":{"replace":false,"merge":false}}}`), 1},
		{"modify merge missing", interceptJS(tb, `{"effects":["deny","modify"],"modify":{"input":{"replace":true}}}`), 1},
		{"modify wrong target", interceptJS(tb, `{"effects":["deny","modify"],"modify":{"output":{"replace":true,"merge":true}}}`), 1},
		{"flow operations empty", interceptJS(tb, `{"effects":["deny","flow"],"flow":{"operations":[]}}`), 1},
		{"flow operations missing", interceptJS(tb, `{"effects":["deny","flow"],"flow":{}}`), 1},
		{"continue at tool.before", interceptJS(tb, `{"effects":["deny","flow"],"flow":{"operations":["continue"],"remainingContinuations":1,"continuationCount":0}}`), 1},
		{"continue without counters", interceptJS(ta, `{"effects":["flow"],"flow":{"operations":["continue"]}}`), 2},
		{"counter negative", interceptJS(ta, `{"effects":["flow"],"flow":{"operations":["continue"],"remainingContinuations":-1,"continuationCount":0}}`), 1},
		{"inject append false", interceptJS(tb, `{"effects":["deny","inject"],"inject":{"context":{"append":false,"deliverAt":["now"]}}}`), 1},
		{"inject deliverAt bad", interceptJS(tb, `{"effects":["deny","inject"],"inject":{"context":{"append":true,"deliverAt":["soon"]}}}`), 1},
		{"effect not allowed at boundary", interceptJS(ss, `{"effects":["deny","message"]}`), 1},
		{"return only at allowed boundaries", interceptJS(ta, `{"effects":["return"]}`), 1},
		{"elicitation form not object", interceptJS(tb, `{"effects":["deny"],"elicitation":{"form":true}}`), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := shapeFindings(harnessFrame(tt.frame))
			wantFindings(t, fs, "CAP-1", tt.want)
			if tt.want == 0 && len(fs) > 0 {
				t.Errorf("unexpected findings:%s", dump(fs))
			}
		})
	}
}

func TestDiscovery(t *testing.T) {
	capsResult := func(manifest string) string {
		return `{"jsonrpc":"2.0","id":"d","result":{"protocolVersion":"draft","manifest":` + manifest + `}}`
	}
	m := tManifest
	tests := []struct {
		name  string
		frame string
		want  int // CAP-2 findings
	}{
		{"request ok", `{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`, 0},
		{"request extra param", `{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"draft","session":{}}}`, 1},
		{"result ok", capsResult(m), 0},
		{"result with effects", `{"jsonrpc":"2.0","id":"d","result":{"protocolVersion":"draft","manifest":` + m + `,"effects":[]}}`, 1},
		{"manifest identity", capsResult(strings.Replace(m, `"gaps":[]`, `"gaps":[],"identity":{"user":"x"}`, 1)), 1},
		{"manifest field missing", capsResult(strings.Replace(m, `"toolPaths":["native"],`, ``, 1)), 1},
		{"manifest unknown event", capsResult(strings.Replace(m, `"turn.end"`, `"tool.error"`, 1)), 1},
		{"manifest intercept of observe-only", capsResult(strings.Replace(m, `"event":"turn.end","modes":["observe"]`, `"event":"turn.end","modes":["intercept"],"capabilities":{"effects":[]}`, 1)), 1},
		{"manifest intercept without capabilities", capsResult(strings.Replace(m, `"modes":["intercept","observe"],"capabilities":{"effects":["deny"]}`, `"modes":["intercept"]`, 1)), 1},
		{"manifest observe entry with effects", capsResult(strings.Replace(m, `"modes":["observe"]`, `"modes":["observe"],"capabilities":{"effects":["deny"]}`, 1)), 1},
		{"manifest modes empty", capsResult(strings.Replace(m, `"modes":["observe"]`, `"modes":[]`, 1)), 1},
		{"manifest entry capabilities per boundary", capsResult(strings.Replace(m, `"effects":["deny"]}`, `"effects":["deny","flow"],"flow":{"operations":["continue"],"remainingContinuations":0,"continuationCount":0}}`, 1)), 1},
		{"manifest transport enum", capsResult(strings.Replace(m, `["stdio"]`, `["grpc"]`, 1)), 1},
		{"manifest authentication mtls", capsResult(strings.Replace(m, `"authentication":[]`, `"authentication":["mtls"]`, 1)), 1},
		{"manifest limits negative", capsResult(strings.Replace(m, `"limits":{}`, `"limits":{"maxTimeoutMs":-1}`, 1)), 1},
		{"managed disableable", capsResult(strings.Replace(m, `"scopes":["user"]`, `"scopes":["managed"]`, 1)), 1},
		{"manifest not object", capsResult(`[]`), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := harnessFrame(tt.frame)
			if strings.Contains(tt.frame, `"result"`) {
				f = backendFrame(tt.frame)
			}
			fs := shapeFindings(f)
			wantFindings(t, fs, "CAP-2", tt.want)
			if tt.want == 0 && len(fs) > 0 {
				t.Errorf("unexpected findings:%s", dump(fs))
			}
		})
	}
}
