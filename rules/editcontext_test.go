package rules

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// TestResponseContextWithoutModify: a response without modify effects is
// judged without gathering the event's values, but still against the
// capabilities its request advertised: an unadvertised effect rejects the
// response (BASE-9), an advertised one or none is accepted, and a modify
// still sees the event's current value.
func TestResponseContextWithoutModify(t *testing.T) {
	ev := convEvent("e1", "tool.before", `,"tool":{"name":"Bash","input":{"command":"ls"}}`)
	caps := `{"effects":["deny","modify"],"modify":{"input":{"merge":true}}}`
	for _, tc := range []struct {
		name, effects string
		accepted      bool
		reason        vocab.CheckID
	}{
		{"no effects", `[]`, true, ""},
		{"advertised deny", `[{"type":"deny","reason":"r"}]`, true, ""},
		{"unadvertised flow stop", `[{"type":"flow","operation":"stop","reason":"r"}]`, false, vocab.Base9},
		{"merge over the current value", `[{"type":"modify","target":"input","operation":"merge","value":{"timeout":5}}]`, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs, _ := exchangesOf(tap.Config{}, Default(Options{}),
				harnessFrame(convIntercept("e1", ev, caps)),
				backendFrame(convResult("e1", tc.effects)))
			if len(xs) != 1 {
				t.Fatalf("%d exchanges", len(xs))
			}
			res, ok := xs[0].Edit.(EditResult)
			if !ok {
				t.Fatalf("exchange has no edit result: %#v", xs[0].Edit)
			}
			if res.Accepted != tc.accepted || !tc.accepted && (len(res.Reasons) == 0 || res.Reasons[0].Check != tc.reason) {
				t.Errorf("accepted %v, reasons %+v; want accepted %v, reason %s", res.Accepted, res.Reasons, tc.accepted, tc.reason)
			}
			if tc.name == "merge over the current value" {
				got := string(res.Effective["input"].Canonical())
				if want := `{"command":"ls","timeout":5}`; got != want {
					t.Errorf("effective input = %s, want %s", got, want)
				}
			}
		})
	}
}
