package rules

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestNotificationAnswered(t *testing.T) {
	note := func() *tap.Frame { return harnessFrame(convObserve(convEvent("e1", "tool.after", ""))) }
	req := func(id string) *tap.Frame {
		return harnessFrame(convIntercept(id, convEvent(id, "tool.before", ""), denyCaps))
	}
	nullRes := func() *tap.Frame {
		return backendFrame(`{"jsonrpc":"2.0","id":null,"result":{"protocolVersion":"draft","effects":[]}}`)
	}
	tests := []struct {
		name      string
		lifecycle string
		frames    []*tap.Frame
		want      int // BASE-7
		wantCorr  int // CORR-2
	}{
		{"null id after a notification", "persistent", []*tap.Frame{note(), nullRes()}, 1, 0},
		{"error with null id after a notification", "", []*tap.Frame{note(), backendFrame(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}`)}, 1, 0},
		{"no id after a notification", "persistent", []*tap.Frame{note(), backendFrame(`{"jsonrpc":"2.0","result":{}}`)}, 1, 0},
		{"event id echoed", "persistent", []*tap.Frame{note(), req("e2"), backendFrame(convResult("e1", `[]`)), backendFrame(convResult("e2", `[]`))}, 1, 0},
		{"per_event: any line after a notification", "per_event", []*tap.Frame{onConn(note(), "p1"), onConn(backendFrame(convResult("x", `[]`)), "p1")}, 1, 0},
		{"per_event: other process's request", "per_event", []*tap.Frame{onConn(note(), "p1"), onConn(req("e2"), "p2"), onConn(backendFrame(convResult("e2", `[]`)), "p2")}, 0, 0},
		{"null id after a request is not about a notification", "persistent", []*tap.Frame{note(), req("e2"), nullRes(), backendFrame(convResult("e2", `[]`))}, 0, 1},
		{"unknown id after a notification is CORR-2's", "persistent", []*tap.Frame{note(), backendFrame(convResult("zz", `[]`))}, 0, 1},
		{"null-id error answers a malformed request", "persistent", []*tap.Frame{harnessFrame(`{"jsonrpc":"2.0","id":`), backendFrame(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)}, 0, 0},
		{"null-id success after a malformed request", "persistent", []*tap.Frame{harnessFrame(`{"jsonrpc":"2.0","id":`), backendFrame(`{"jsonrpc":"2.0","id":null,"result":{}}`)}, 0, 1},
		{"notification alone", "persistent", []*tap.Frame{note()}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := append(errorRules(), correlationRules()...)
			fs := runRules(tap.Config{Lifecycle: tt.lifecycle}, rs, tt.frames...)
			wantFindings(t, fs, "BASE-7", tt.want)
			wantFindings(t, fs, "CORR-2", tt.wantCorr)
		})
	}
}

func TestDefinedErrors(t *testing.T) {
	capsReq := func(version string) *tap.Frame {
		return harnessFrame(`{"jsonrpc":"2.0","id":"e1","method":"hooks/capabilities","params":{"protocolVersion":"` + version + `"}}`)
	}
	capsOK := func() *tap.Frame {
		return backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","manifest":{}}}`)
	}
	intercept := func(typ string) *tap.Frame {
		return harnessFrame(convIntercept("e1", convEvent("e1", typ, ""), denyCaps))
	}
	tests := []struct {
		name   string
		frames []*tap.Frame
		want   tap.Level // 0: no finding
	}{
		{"supported request, success", []*tap.Frame{intercept("tool.before"), backendFrame(convResult("e1", `[]`))}, 0},
		{"supported request, error", []*tap.Frame{intercept("tool.before"), backendFrame(convError("e1", -32003))}, 0},
		{"unknown event, -32002", []*tap.Frame{intercept("tool.error"), backendFrame(convError("e1", -32002))}, 0},
		{"unknown event, success", []*tap.Frame{intercept("tool.error"), backendFrame(convResult("e1", `[]`))}, tap.Error},
		{"unknown event, other code", []*tap.Frame{intercept("tool.error"), backendFrame(convError("e1", -32603))}, tap.Warn},
		{"observe-only event intercepted, success", []*tap.Frame{intercept("turn.end"), backendFrame(convResult("e1", `[]`))}, tap.Error},
		{"observe-only event intercepted, -32002", []*tap.Frame{intercept("turn.end"), backendFrame(convError("e1", -32002))}, 0},
		{"unknown method, success", []*tap.Frame{harnessFrame(`{"jsonrpc":"2.0","id":"e1","method":"hooks/x","params":{"protocolVersion":"draft"}}`), backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{}}`)}, tap.Error},
		{"unknown method, -32601", []*tap.Frame{harnessFrame(`{"jsonrpc":"2.0","id":"e1","method":"hooks/x","params":{"protocolVersion":"draft"}}`), backendFrame(convError("e1", -32601))}, 0},
		{"other version, -32001", []*tap.Frame{capsReq("0.1"), backendFrame(convError("e1", -32001))}, 0},
		{"other version, success", []*tap.Frame{capsReq("0.1"), capsOK()}, tap.Error},
		{"current version, success", []*tap.Frame{capsReq("draft"), capsOK()}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := withCheck(runRules(tap.Config{}, errorRules(), tt.frames...), "BASE-7")
			switch {
			case tt.want == 0 && len(fs) != 0:
				t.Errorf("findings %s, want none", dump(fs))
			case tt.want != 0 && (len(fs) != 1 || fs[0].Level != tt.want):
				t.Errorf("findings %s, want one %v", dump(fs), tt.want)
			}
		})
	}
}

// CORR-2 leaves an answer to a notification to BASE-7 even when it runs
// without it.
func TestNotificationAnsweredAlone(t *testing.T) {
	fs := runRules(tap.Config{}, correlationRules(),
		harnessFrame(convObserve(convEvent("e1", "tool.after", ""))),
		backendFrame(`{"jsonrpc":"2.0","id":null,"result":{}}`))
	wantFindings(t, fs, "CORR-2", 0)
}
