package conduct

import (
	"slices"
	"time"
)

// maxChains bounds the chains a Timeline keeps for reports.
const maxChains = 256

// A Chain is the per-event view of one judged event for reports: which
// backend got it when, what each answered, and where the chain stopped.
type Chain struct {
	EventID   string `json:"eventId"`
	EventType string `json:"eventType"`
	Source    string `json:"source,omitempty"`
	// Steps are the deliveries in the order they were sent.
	Steps []Step `json:"steps"`
	// Ended says what ended the chain early ("" when it ran its course).
	Ended string `json:"ended,omitempty"`
	// Findings are the conduct rules reported about the event.
	Findings []string `json:"findings,omitempty"`
}

// A Step is one delivery of the event to one backend.
type Step struct {
	Hook   string    `json:"hook"`
	Method string    `json:"method"`
	Sent   time.Time `json:"sent"`
	// LatencyMs is how long the backend took to answer an intercept (or
	// until the harness gave up at the deadline).
	LatencyMs float64 `json:"latencyMs,omitempty"`
	Outcome   string  `json:"outcome,omitempty"`
	Policy    string  `json:"failurePolicy,omitempty"`
}

func chainOf(e *event) Chain {
	c := Chain{EventID: e.key.ID, EventType: e.typ, Source: e.key.Source, Ended: e.endWhy}
	for r := range e.reported {
		c.Findings = append(c.Findings, r)
	}
	slices.Sort(c.Findings)
	for _, d := range e.deliveries {
		s := Step{Hook: d.hook.id, Method: d.method, Sent: d.sent, Outcome: d.outcome, Policy: d.policy}
		if d.method == "hooks/intercept" && !d.at.IsZero() {
			s.LatencyMs = float64(d.at.Sub(d.sent).Microseconds()) / 1000
		}
		c.Steps = append(c.Steps, s)
	}
	return c
}

// Chains returns the most recent judged chains (at most 256), oldest
// first.
func (t *Timeline) Chains() []Chain {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Chain(nil), t.chains...)
}
