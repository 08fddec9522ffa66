package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// BenchmarkEditResponse measures the EDIT rules on a request/response pair
// with a 20-message merge, the common case of a live intercept.
func BenchmarkEditResponse(b *testing.B) {
	var msgs []string
	for i := 0; i < 20; i++ {
		msgs = append(msgs, msgJSON("m", "tool", textPartJSON("p", "some text of a tool result")))
	}
	req := []byte(interceptJSON(toolAfterEvent, toolAfterCaps))
	resp := []byte(resultJSON(`[{"type":"modify","target":"output","operation":"merge","value":[` + strings.Join(msgs, ",") + `]}]`))
	rules := editRules()
	b.ReportAllocs()
	for b.Loop() {
		e := tap.NewEngine(tap.Config{}, rules)
		e.Feed(&tap.Frame{Dir: tap.FromHarness, Transport: tap.File, Raw: req})
		if fs := e.Feed(&tap.Frame{Dir: tap.FromBackend, Transport: tap.File, Raw: resp}); len(fs) != 0 {
			b.Fatalf("unexpected findings: %v", fs)
		}
	}
}
