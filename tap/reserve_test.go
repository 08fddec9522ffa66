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
	a := NewEngineSession(NewEngine(Config{}, []Rule{holdRule{gate, entered, &seen}}), &findingList{}, nil).
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
	must("Reserve(60)", a.Reserve(60), true)
	must("Reserve(50) with 38 left", a.Reserve(50), false)
	now(60)
	// The held 60 go to the queue with the frame: nothing more to charge.
	must("SubmitAll(reserved 60)", a.SubmitAll(Item{Frame: &Frame{Raw: []byte(`{"a":1}`)}, Reserved: 60}), true)
	now(60)
	must("Reserve(38)", a.Reserve(38), true)
	must("Reserve(1) with the budget spent", a.Reserve(1), false)
	// A frame larger than its reservation needs the difference: none left.
	must("SubmitAll(reserved 38, raw 50)", a.SubmitAll(Item{Frame: &Frame{Raw: make([]byte, 50)}, Reserved: 38}), false)
	now(60) // the dropped frame's reservation was given back
	if a.Dropped() != 1 {
		t.Errorf("Dropped() = %d, want 1", a.Dropped())
	}
	must("Reserve(38) after the drop", a.Reserve(38), true)
	a.Release(38)
	now(60)
	a.Cut()
	if a.Cuts() != 1 {
		t.Errorf("Cuts() = %d, want 1", a.Cuts())
	}
	close(gate)
	a.Close()
	if q, _ := a.Queued(); q != 0 {
		t.Errorf("Queued() = %d after Close, want 0", q)
	}
	if seen.Load() != 2 {
		t.Errorf("the rules saw %d frames, want 2", seen.Load())
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
