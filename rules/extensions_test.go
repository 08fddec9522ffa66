package rules

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestExtensions(t *testing.T) {
	ext := func(key string) string { return `,"extensions":{"` + key + `":{"a":1}}` }
	deny := func(more string) *tap.Frame {
		return backendFrame(convResult("e1", `[{"type":"deny","reason":"r"`+more+`}]`))
	}
	tests := []struct {
		name string
		f    *tap.Frame
		want int
	}{
		{"event extension ok", harnessFrame(convObserve(convEvent("e1", "tool.before", ext("org.w3c.trace_context")))), 0},
		{"event extension unnamespaced", harnessFrame(convObserve(convEvent("e1", "tool.before", ext("trace")))), 1},
		{"event extension leading digit", harnessFrame(convObserve(convEvent("e1", "tool.before", ext("1com.example")))), 1},
		{"params extension", harnessFrame(`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":` + convEvent("e1", "tool.before", "") + `,"capabilities":{"effects":["deny"]},"extensions":{"policy":1,"com.example.ok":2}}}`), 1},
		{"observe params define no extensions", harnessFrame(`{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":` + convEvent("e1", "tool.before", "") + `,"extensions":{"policy":1}}}`), 0},
		{"capabilities results define no extensions", backendFrame(`{"jsonrpc":"2.0","id":"d","result":{"protocolVersion":"draft","manifest":{},"extensions":{"x_y":true}}}`), 0},
		{"result extension", backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[],"extensions":{"x_y":true}}}`), 1},
		{"deny extension and code ok", deny(`,"code":"com.example.policy.protected_path","extensions":{"com.example.policy":{}}`), 0},
		{"deny code not reverse-DNS", deny(`,"code":"PROTECTED"`), 1},
		{"deny code not a string", deny(`,"code":7`), 1},
		{"deny extension key", deny(`,"extensions":{"rule":{}}`), 1},
		{"capability extension effect ok", harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), `{"effects":["deny","com.example.quarantine"]}`)), 0},
		{"capability effect not reverse-DNS", harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), `{"effects":["deny","grant"]}`)), 1},
		{"session.start manifest effect not reverse-DNS", harnessFrame(convObserve(convEvent("e1", "session.start", `,"manifest":{"events":[{"event":"tool.before","modes":["intercept"],"capabilities":{"effects":["sudo"]}}]}`))), 1},
		{"manifest is only defined on session.start", harnessFrame(convObserve(convEvent("e1", "tool.before", `,"manifest":{"events":[{"event":"tool.before","modes":["intercept"],"capabilities":{"effects":["sudo"]}}]}`))), 0},
		{"observe params define no capabilities", harnessFrame(`{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":` + convEvent("e1", "tool.before", "") + `,"capabilities":{"effects":["grant"]}}}`), 0},
		{"manifest effect not reverse-DNS", backendFrame(`{"jsonrpc":"2.0","id":"d","result":{"protocolVersion":"draft","manifest":{"events":[{"event":"tool.before","modes":["intercept"],"capabilities":{"effects":["deny","sudo"]}}]}}}`), 1},
		{"opaque tool input is not looked into", harnessFrame(convObserve(convEvent("e1", "tool.before", `,"tool":{"name":"t","origin":"native","input":{"extensions":{"vscode":1}}}`))), 0},
		{"error responses are not looked into", backendFrame(`{"jsonrpc":"2.0","id":"e1","error":{"code":-32004,"message":"m","data":{"extensions":{"x":1}}}}`), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Partial: true}, extensionRules(), tt.f)
			wantFindings(t, fs, "BASE-4", tt.want)
		})
	}
}
