package rules

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestUnknownNotification(t *testing.T) {
	tests := []struct {
		name string
		f    *tap.Frame
		want int
	}{
		{"known event", harnessFrame(convObserve(convEvent("e1", "turn.end", ""))), 0},
		{"unknown fields are never findings", harnessFrame(convObserve(convEvent("e1", "tool.before", `,"x-new":{"a":1},"futureField":[1]`))), 0},
		{"unknown event", harnessFrame(convObserve(convEvent("e1", "unknown.event", ""))), 1},
		{"removed tool.error", harnessFrame(convObserve(convEvent("e1", "tool.error", ""))), 1},
		{"removed prompt.submitted", harnessFrame(convObserve(convEvent("e1", "prompt.submitted", ""))), 1},
		{"unknown method", harnessFrame(`{"jsonrpc":"2.0","method":"hooks/notify","params":{"protocolVersion":"draft"}}`), 1},
		{"type missing is EVT-1's", harnessFrame(convObserve(`{"id":"e1"}`)), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{}, unknownRules(), tt.f)
			wantFindings(t, fs, "BASE-3", tt.want)
			for _, f := range fs {
				if f.Level != tap.Error {
					t.Errorf("level %v, want error: %v", f.Level, f)
				}
			}
		})
	}
}

func TestUnknownRequest(t *testing.T) {
	unknownEvent := func() *tap.Frame {
		return harnessFrame(convIntercept("e1", convEvent("e1", "tool.error", ""), denyCaps))
	}
	unknownMethod := func() *tap.Frame {
		return harnessFrame(`{"jsonrpc":"2.0","id":"e1","method":"hooks/grant","params":{"protocolVersion":"draft"}}`)
	}
	tests := []struct {
		name    string
		partial bool
		frames  []*tap.Frame
		want    tap.Level // 0: no finding
	}{
		{"known event answered", false, []*tap.Frame{harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), backendFrame(convResult("e1", `[]`))}, 0},
		{"unknown event refused with -32002", false, []*tap.Frame{unknownEvent(), backendFrame(convError("e1", -32002))}, tap.Warn},
		{"unknown event refused with another code", false, []*tap.Frame{unknownEvent(), backendFrame(convError("e1", -32004))}, tap.Warn},
		{"unknown event accepted", false, []*tap.Frame{unknownEvent(), backendFrame(convResult("e1", `[]`))}, tap.Error},
		{"unknown event unanswered", false, []*tap.Frame{unknownEvent()}, tap.Error},
		{"unknown event in an excerpt", true, []*tap.Frame{unknownEvent()}, tap.Error},
		{"unknown method refused with -32601", false, []*tap.Frame{unknownMethod(), backendFrame(convError("e1", -32601))}, tap.Warn},
		{"unknown method accepted", false, []*tap.Frame{unknownMethod(), backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`)}, tap.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := withCheck(runRules(tap.Config{Partial: tt.partial}, unknownRules(), tt.frames...), "BASE-3")
			switch {
			case tt.want == 0 && len(fs) != 0:
				t.Errorf("findings %s, want none", dump(fs))
			case tt.want != 0 && (len(fs) != 1 || fs[0].Level != tt.want):
				t.Errorf("findings %s, want one %v", dump(fs), tt.want)
			case tt.want != 0 && fs[0].Seq != 1:
				t.Errorf("finding on #%d, want it on the request #1", fs[0].Seq)
			}
		})
	}
}
