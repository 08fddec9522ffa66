package tap

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestAuditorCloseWithinIsBounded: with the audit stuck (a rule, or a
// capture write, that does not return), CloseWithin returns at its bound,
// counts what was left as not audited and says so in one TAP-1 finding
// (issue 8 item 5: --drain bounds the whole shutdown).
func TestAuditorCloseWithinIsBounded(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate) // lets the stuck audit goroutine end
	var seen atomic.Int64
	var sink findingList
	a := NewSession(SessionConfig{Rules: ruleList([]Rule{gateRule{gate, &seen}}), Sink: &sink}).Audit(AuditorConfig{Queue: 64})
	for range 20 {
		a.Submit(&Frame{Raw: []byte(`{}`)})
	}
	done := make(chan bool, 1)
	go func() { done <- a.CloseWithin(50 * time.Millisecond) }()
	select {
	case complete := <-done:
		if complete {
			t.Errorf("CloseWithin = true with the audit stuck, want false")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("CloseWithin did not return while the audit was stuck")
	}
	if a.Dropped() < 19 {
		t.Errorf("Dropped() = %d, want the 19 frames left in the queue counted", a.Dropped())
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var found bool
	for _, f := range sink.fs {
		found = found || (f.Check == "TAP-1" && strings.Contains(f.Message, "shutdown bound"))
	}
	if !found {
		t.Errorf("findings %v: want a TAP-1 saying the shutdown bound passed", sink.fs)
	}
}
