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

func TestTryNoteKeepsOrderAndNeverBlocks(t *testing.T) {
	var log []string
	a := NewAuditor(NewEngine(Config{}, []Rule{orderRule{&log}}), nil, nil, 0)
	a.Submit(&Frame{Raw: []byte("1")})
	if !a.TryNote(Note{Kind: NoteHTTPResponse}) {
		t.Fatal("TryNote with room in the queue = false")
	}
	a.Submit(&Frame{Raw: []byte("2")})
	a.Close()
	if len(log) != 3 || log[1] != "note:http_response" {
		t.Errorf("order = %v, want 1 note:http_response 2", log)
	}
	if a.TryNote(Note{Kind: NoteEnd}) {
		t.Error("TryNote after Close = true")
	}

	gate := make(chan struct{})
	full := NewAuditor(NewEngine(Config{}, []Rule{blockRule{gate}}), nil, nil, 2)
	for range 3 {
		full.Submit(&Frame{Raw: []byte("x")})
	}
	if full.TryNote(Note{Kind: NoteUpstreamFailure}) { // returns at once, queue full
		t.Error("TryNote on a full queue = true")
	}
	if full.Dropped() == 0 {
		t.Error("a dropped note was not counted")
	}
	close(gate)
	full.Close()
}
