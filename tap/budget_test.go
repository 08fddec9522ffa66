package tap

import (
	"bytes"
	"sync"
	"testing"
)

// tokenRule holds the audit goroutine on every frame until it gets a token,
// so a test decides exactly when the queue drains.
type tokenRule struct{ tokens chan struct{} }

func (r tokenRule) Info() RuleInfo                            { return RuleInfo{ID: "TEST/token", Check: "TEST", Level: Info} }
func (r tokenRule) Check(c *Conversation, f *Frame) []Finding { <-r.tokens; return nil }

func TestAuditorQueueIsBoundedInBytes(t *testing.T) {
	const budget = 1000
	tokens := make(chan struct{})
	var log []string
	a := NewSession(SessionConfig{Rules: ruleList([]Rule{tokenRule{tokens}, orderRule{&log}})}).
		Audit(AuditorConfig{Queue: 1000, Budget: budget})
	// The first frame may sit in the queue or be held in the rule; what
	// follows holds either way.
	if !a.Submit(&Frame{Raw: bytes.Repeat([]byte("h"), 100)}) {
		t.Fatal("first frame dropped")
	}
	var accepted, dropped int
	for i := range 50 {
		size := 60 + i*7 // 60..403 bytes: the budget holds a few
		ok := a.Submit(&Frame{Raw: bytes.Repeat([]byte("x"), size)})
		now, peak := a.Queued()
		if now > budget || peak > budget {
			t.Fatalf("after frame %d: queued %d, peak %d bytes, budget %d", i, now, peak, budget)
		}
		if ok {
			accepted++
		} else {
			dropped++
		}
	}
	if accepted == 0 || dropped == 0 {
		t.Fatalf("accepted %d, dropped %d: the budget should let some in and keep most out", accepted, dropped)
	}
	if got := a.Dropped(); got != uint64(dropped) {
		t.Errorf("Dropped = %d, want %d (every refused frame counted)", got, dropped)
	}
	// A frame larger than the whole budget is never queued.
	if a.Submit(&Frame{Raw: make([]byte, budget+1)}) {
		t.Error("a frame larger than the budget was queued")
	}
	// A batch is counted in bytes as a whole: all or nothing.
	before := a.Dropped()
	if a.SubmitAll(Item{Frame: &Frame{Raw: make([]byte, budget/2+1)}}, Item{Frame: &Frame{Raw: make([]byte, budget/2)}}) {
		t.Error("a batch above the budget was queued")
	}
	if got := a.Dropped() - before; got != 2 {
		t.Errorf("refused batch counted %d drops, want 2", got)
	}
	close(tokens)
	a.Close()
	if now, _ := a.Queued(); now != 0 {
		t.Errorf("queued after Close = %d bytes, want 0", now)
	}
	if len(log) != 1+accepted {
		t.Errorf("audited %d frames, want %d", len(log), 1+accepted)
	}
}

func TestCompleteAuditorWaitsInsteadOfDropping(t *testing.T) {
	const budget, frames, senders = 256, 2000, 4
	var log []string
	a := NewSession(SessionConfig{Rules: ruleList([]Rule{orderRule{&log}})}).
		Audit(AuditorConfig{Queue: 2, Budget: budget, Complete: true})
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range frames / senders {
				f := &Frame{Raw: bytes.Repeat([]byte{byte('a' + s)}, 1+i%100)}
				if !a.Submit(f) {
					t.Errorf("sender %d frame %d dropped by a complete auditor", s, i)
					return
				}
				if i%50 == 0 {
					a.Note(Note{Kind: NoteEOF}) // notes wait for room too
				}
			}
		}()
	}
	wg.Wait()
	a.Close()
	_, peak := a.Queued()
	if peak > budget {
		t.Errorf("peak %d bytes queued, budget %d", peak, budget)
	}
	if a.Dropped() != 0 {
		t.Errorf("Dropped = %d, want 0", a.Dropped())
	}
	n := 0
	for _, l := range log {
		if len(l) < 5 || l[:5] != "note:" {
			n++
		}
	}
	if n != frames {
		t.Errorf("audited %d frames, want %d", n, frames)
	}
}
