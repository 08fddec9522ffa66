package tap

import (
	"sync/atomic"
	"testing"
)

// TestReserveSharesTheBudgetWithTheQueue: bytes reserved for copies in
// flight and bytes queued come out of one budget; a reservation handed
// over with its frame stays charged until the frame is taken, and one
// handed over with a dropped frame is given back (issue 10 item 2).
func TestReserveSharesTheBudgetWithTheQueue(t *testing.T) {
	gate, entered := make(chan struct{}), make(chan struct{})
	var seen atomic.Int64
	a := NewSession(SessionConfig{Rules: ruleList([]Rule{holdRule{gate, entered, &seen}}), Sink: &findingList{}}).
		Audit(AuditorConfig{Queue: 4, Budget: 100})
	// The audit goroutine takes a first frame and holds it: from then on
	// nothing leaves the queue until the gate opens. The frame being
	// checked stays charged (2 bytes) until the rules are done with it.
	a.Submit(&Frame{Raw: []byte(`{}`)})
	<-entered
	must := func(what string, got, want bool) {
		t.Helper()
		if got != want {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
	now := func(want int64) {
		t.Helper()
		if q, peak := a.Queued(); q != want+2 || peak > 100 {
			t.Fatalf("Queued() = %d (peak %d), want %d (peak at most the budget, 100)", q, peak, want+2)
		}
	}
	// Reservations may take the budget up to 7/8 of it (88 of 100 here).
	must("Reserve(60)", a.Reserve(60), true)
	must("Reserve(30) past 7/8 of the budget", a.Reserve(30), false)
	now(60)
	// The held 60 go to the queue with the frame: nothing more to charge.
	must("SubmitAll(reserved 60)", a.SubmitAll(Item{Frame: &Frame{Raw: []byte(`{"a":1}`)}, Reserved: 60}), true)
	now(60)
	must("Reserve(26)", a.Reserve(26), true)
	must("Reserve(1) at 7/8 of the budget", a.Reserve(1), false)
	// A frame larger than its reservation needs the difference: 24 more
	// would pass the budget.
	must("SubmitAll(reserved 26, raw 50)", a.SubmitAll(Item{Frame: &Frame{Raw: make([]byte, 50)}, Reserved: 26}), false)
	now(60) // the dropped frame's reservation was given back
	if a.Dropped() != 1 {
		t.Errorf("Dropped() = %d, want 1", a.Dropped())
	}
	must("Reserve(26) after the drop", a.Reserve(26), true)
	a.Release(26)
	now(60)
	// A frame submitted without a reservation may use the last eighth.
	must("SubmitAll(raw 30) into the last eighth", a.SubmitAll(Item{Frame: &Frame{Raw: make([]byte, 30)}}), true)
	now(90)
	must("Reserve(1) with the last eighth in use", a.Reserve(1), false)
	a.Cut()
	if a.Cuts() != 1 {
		t.Errorf("Cuts() = %d, want 1", a.Cuts())
	}
	close(gate)
	a.Close()
	if q, _ := a.Queued(); q != 0 {
		t.Errorf("Queued() = %d after Close, want 0", q)
	}
	if seen.Load() != 3 {
		t.Errorf("the rules saw %d frames, want 3", seen.Load())
	}
}

// holdRule closes entered when it first checks a frame, then waits for
// gate on every frame, and counts them.
type holdRule struct {
	gate, entered chan struct{}
	seen          *atomic.Int64
}

func (r holdRule) Info() RuleInfo {
	return RuleInfo{ID: "TEST/hold", Check: "TEST", Level: Info, Summary: "test"}
}

func (r holdRule) Check(c *Conversation, f *Frame) []Finding {
	if r.seen.Add(1) == 1 {
		close(r.entered)
	}
	<-r.gate
	return nil
}
