package report

import (
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/conduct"
)

// A chain line says who got the event when and what each answered; text
// from the wire can neither act on a terminal nor start a workflow command.
func TestChainText(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := conduct.Chain{EventID: "e1", EventType: "tool.before", Ended: "an accepted deny from a", Findings: []string{"COND-2/after-stop"},
		Steps: []conduct.Step{
			{Hook: "a", Method: "hooks/intercept", Sent: t0, LatencyMs: 12.5, Outcome: "explicit_deny", Policy: "fail-closed"},
			{Hook: "b", Method: "hooks/observe", Sent: t0.Add(20 * time.Millisecond)},
		}}
	want := "event tool.before e1: +0s a intercept → explicit_deny in 12.5ms (fail-closed); +20ms b observe — stopped: an accepted deny from a [COND-2/after-stop]"
	if got := ChainText(c); got != want {
		t.Errorf("ChainText:\n got %s\nwant %s", got, want)
	}
	c.EventID = "e1\n::error::owned\x1b]0;title\x07\u202e"
	got := ChainText(c)
	if strings.ContainsAny(got, "\n\x1b\x07\u202e") || !strings.Contains(got, `e1\n::error::owned\x1b]0;title\a\u202e`) {
		t.Errorf("unsafe event id printed as %q", got)
	}
}
