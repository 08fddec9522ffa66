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
