package rules

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestEnvelope(t *testing.T) {
	const okReq = `{"jsonrpc":"2.0","id":"a","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`
	tests := []struct {
		name string
		f    *tap.Frame
		want int
	}{
		{"request ok", harnessFrame(okReq), 0},
		{"notification ok", harnessFrame(`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}`), 0},
		{"response ok", backendFrame(`{"jsonrpc":"2.0","id":1,"result":{}}`), 0},
		{"error response ok", backendFrame(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`), 0},
		{"batch", harnessFrame(`[` + okReq + `]`), 1},
		{"not json", harnessFrame(`hello`), 1},
		{"bad utf8", harnessFrame("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"m\",\"params\":{}}"), 1},
		{"dup key", harnessFrame(`{"jsonrpc":"2.0","id":"a","id":"b","method":"m","params":{}}`), 1},
		{"wrong version", harnessFrame(`{"jsonrpc":"1.0","id":"a","method":"m","params":{}}`), 1},
		{"result and error", backendFrame(`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`), 1},
		{"float id", harnessFrame(`{"jsonrpc":"2.0","id":1.5,"method":"m","params":{}}`), 1},
		{"params array", harnessFrame(`{"jsonrpc":"2.0","id":1,"method":"m","params":[]}`), 1},
		{"error code string", backendFrame(`{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`), 1},
		{"observe with id", harnessFrame(`{"jsonrpc":"2.0","id":"a","method":"hooks/observe","params":{}}`), 1},
		{"intercept without id", harnessFrame(`{"jsonrpc":"2.0","method":"hooks/intercept","params":{}}`), 1},
		{"unknown field is fine", harnessFrame(`{"jsonrpc":"2.0","id":"a","method":"m","params":{},"x-extra":1}`), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Partial: true}, envelopeRules(), tt.f)
			wantFindings(t, fs, "BASE-1", tt.want)
		})
	}
}
