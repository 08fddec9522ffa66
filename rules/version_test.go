package rules

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestVersion(t *testing.T) {
	ev := convEvent("e1", "tool.before", "")
	tests := []struct {
		name string
		f    *tap.Frame
		want int
	}{
		{"request ok", harnessFrame(convIntercept("e1", ev, denyCaps)), 0},
		{"notification ok", harnessFrame(convObserve(ev)), 0},
		{"capabilities ok", harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`), 0},
		{"result ok", backendFrame(convResult("e1", `[]`)), 0},
		{"error response needs none", backendFrame(convError("e1", -32001)), 0},
		{"request missing", harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{}}`), 1},
		{"request other snapshot", harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"0.1"}}`), 1},
		{"notification missing", harnessFrame(`{"jsonrpc":"2.0","method":"hooks/observe","params":{"event":` + ev + `}}`), 1},
		{"notification not a string", harnessFrame(`{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":1,"event":` + ev + `}}`), 1},
		{"result other snapshot", backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"1900-01-01","effects":[]}}`), 1},
		{"result missing", backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{"effects":[]}}`), 1},
		{"params not an object is BASE-1's", harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":[]}`), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Partial: true}, versionRules(), tt.f)
			wantFindings(t, fs, "BASE-2", tt.want)
		})
	}
}

func TestVersionSnapshot(t *testing.T) {
	f := harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"2027-01-01"}}`)
	wantFindings(t, runRules(tap.Config{Snapshot: "2027-01-01", Partial: true}, versionRules(), f), "BASE-2", 0)
	f = harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`)
	wantFindings(t, runRules(tap.Config{Snapshot: "2027-01-01", Partial: true}, versionRules(), f), "BASE-2", 1)
}

// A -32001 refusal of a request with another version is conforming: the
// request is reported (the harness's fault), the answer is not.
func TestVersionRefusedCorrectly(t *testing.T) {
	req := harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"0.1"}}`)
	res := backendFrame(convError("d", -32001))
	fs := runRules(tap.Config{}, append(versionRules(), errorRules()...), req, res)
	wantFindings(t, fs, "BASE-2", 1)
	wantFindings(t, fs, "BASE-7", 0)
	if got := withCheck(fs, "BASE-2"); len(got) == 1 && got[0].Seq != 1 {
		t.Errorf("BASE-2 finding on frame #%d, want #1 (the request)", got[0].Seq)
	}
}
