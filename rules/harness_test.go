package rules

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestHarness(t *testing.T) {
	ev := func(harness string) string {
		return `{"id":"e1","source":"https://h.example/r","type":"tool.before","time":"2026-08-24T08:51:14Z"` + harness + `}`
	}
	tests := []struct {
		name string
		f    *tap.Frame
		want int
	}{
		{"observe ok", harnessFrame(convObserve(ev(`,"harness":{"name":"h","version":"1.0"}`))), 0},
		{"intercept ok", harnessFrame(convIntercept("e1", ev(`,"harness":{"name":"h","version":"1.0"}`), denyCaps)), 0},
		{"extra harness fields are ignored", harnessFrame(convObserve(ev(`,"harness":{"name":"h","version":"1.0","build":7}`))), 0},
		{"observe missing", harnessFrame(convObserve(ev(``))), 1},
		{"intercept missing", harnessFrame(convIntercept("e1", ev(``), denyCaps)), 1},
		{"not an object", harnessFrame(convObserve(ev(`,"harness":"h/1.0"`))), 1},
		{"name missing", harnessFrame(convObserve(ev(`,"harness":{"version":"1.0"}`))), 1},
		{"name empty", harnessFrame(convObserve(ev(`,"harness":{"name":"","version":"1.0"}`))), 1},
		{"version white space", harnessFrame(convObserve(ev(`,"harness":{"name":"h","version":" \t"}`))), 1},
		{"version a number", harnessFrame(convObserve(ev(`,"harness":{"name":"h","version":1}`))), 1},
		{"both empty", harnessFrame(convObserve(ev(`,"harness":{}`))), 2},
		{"capabilities carry no event", harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`), 0},
		{"responses carry no event", backendFrame(convResult("e1", `[]`)), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Partial: true}, harnessRules(), tt.f)
			wantFindings(t, fs, "BASE-8", tt.want)
			for _, f := range fs {
				if f.Requirement != "" {
					t.Errorf("BASE-8 finding has requirement %q; it is a profile rule", f.Requirement)
				}
			}
		})
	}
}
