package tap

import (
	"testing"
)

// orderRule records frames and notes in the order the engine sees them.
type orderRule struct{ log *[]string }

func (r orderRule) Info() RuleInfo { return RuleInfo{ID: "TEST/order", Check: "TEST", Level: Info} }
func (r orderRule) Check(c *Conversation, f *Frame) []Finding {
	*r.log = append(*r.log, string(f.Raw))
	return nil
}
func (r orderRule) Note(c *Conversation, n Note) []Finding {
	*r.log = append(*r.log, "note:"+string(n.Kind))
	return nil
}

// blockRule blocks on the first frame until gate is closed.
type blockRule struct{ gate chan struct{} }

func (r blockRule) Info() RuleInfo                            { return RuleInfo{ID: "TEST/block", Check: "TEST", Level: Info} }
func (r blockRule) Check(c *Conversation, f *Frame) []Finding { <-r.gate; return nil }

func TestSubmitAllIsAllOrNothing(t *testing.T) {
	var log []string
	gate := make(chan struct{})
	rules := []Rule{blockRule{gate}, orderRule{&log}}
	a := NewSession(SessionConfig{Rules: ruleList(rules)}).Audit(AuditorConfig{Queue: 3})
	a.Submit(&Frame{Raw: []byte("held")}) // may sit in the queue or in the rule
	a.Submit(&Frame{Raw: []byte("q1")})
	if a.SubmitAll(Item{Frame: &Frame{Raw: []byte("req")}}, Item{Frame: &Frame{Raw: []byte("resp")}}, Item{Note: &Note{Kind: NoteHTTPResponse}}) {
		t.Error("SubmitAll of 3 items into at most 2 free slots = true")
	}
	dropped := a.Dropped()
	if dropped != 3 {
		t.Errorf("Dropped = %d, want 3 (every item of the refused batch)", dropped)
	}
	close(gate)
	a.Close()
	for _, l := range log {
		if l == "req" || l == "resp" {
			t.Errorf("part of a refused batch was audited: %v", log)
		}
	}
	var log2 []string
	b := NewSession(SessionConfig{Rules: ruleList([]Rule{orderRule{&log2}})}).Audit(AuditorConfig{Queue: 0})
	if !b.SubmitAll(Item{Frame: &Frame{Raw: []byte("req")}}, Item{Note: &Note{Kind: NoteHTTPResponse}}) {
		t.Error("SubmitAll with room = false")
	}
	b.Close()
	if len(log2) != 2 || log2[0] != "req" || log2[1] != "note:http_response" {
		t.Errorf("order = %v, want req note:http_response", log2)
	}
}

// TestSubmitAllPrepareRunsOnAuditSide checks Item.Prepare (issue 27 item
// 2): it has not run when SubmitAll returns (the audit goroutine is held
// in Begin), it runs before Taken and the rules, which see the prepared
// frame, and it never runs for an item of a refused batch.
func TestSubmitAllPrepareRunsOnAuditSide(t *testing.T) {
	var log []string
	begin := make(chan struct{})
	var prepared []string
	taken := map[string]bool{}
	a := NewSession(SessionConfig{Rules: ruleList([]Rule{orderRule{&log}})}).Audit(AuditorConfig{
		Queue: 2,
		Begin: func() { <-begin },
		Taken: func(f *Frame) { taken[string(f.Raw)] = true },
	})
	prep := func(name string) func(*Frame) {
		return func(f *Frame) {
			if taken[string(f.Raw)] {
				t.Errorf("%s: Taken ran before Prepare", name)
			}
			prepared = append(prepared, name)
			f.Raw = []byte("prepared " + string(f.Raw))
		}
	}
	if !a.SubmitAll(Item{Frame: &Frame{Raw: []byte("req")}, Prepare: prep("req")}, Item{Frame: &Frame{Raw: []byte("resp")}, Prepare: prep("resp")}) {
		t.Fatal("SubmitAll with room = false")
	}
	if a.SubmitAll(Item{Frame: &Frame{Raw: []byte("refused")}, Prepare: prep("refused")}) {
		t.Fatal("SubmitAll into a full queue = true")
	}
	// The audit goroutine is held in Begin: nothing may have been prepared
	// on the submitting goroutine.
	if len(prepared) != 0 {
		t.Fatalf("prepared before the audit goroutine ran: %v", prepared)
	}
	close(begin)
	a.Close()
	if len(prepared) != 2 || prepared[0] != "req" || prepared[1] != "resp" {
		t.Errorf("prepared = %v, want [req resp] (never the refused one)", prepared)
	}
	if len(log) != 2 || log[0] != "prepared req" || log[1] != "prepared resp" {
		t.Errorf("rules saw %v, want the prepared frames", log)
	}
	if !taken["prepared req"] || !taken["prepared resp"] {
		t.Errorf("Taken saw %v, want the prepared frames", taken)
	}
}
