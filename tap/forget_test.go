package tap

import (
	"fmt"
	"testing"
)

func TestKeepAnsweredBoundsTheConversation(t *testing.T) {
	e := NewEngine(Config{KeepAnswered: 10}, nil)
	for i := range 1000 {
		id := fmt.Sprintf(`"r%d"`, i)
		e.Feed(&Frame{Dir: FromHarness, Raw: []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"m","params":{}}`)})
		e.Feed(&Frame{Dir: FromBackend, Raw: []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)})
	}
	// One request left pending stays known.
	e.Feed(&Frame{Dir: FromHarness, Raw: []byte(`{"jsonrpc":"2.0","id":"open","method":"m","params":{}}`)})
	c := e.Conversation()
	if n := len(c.Exchanges()); n > 20 {
		t.Errorf("Exchanges() = %d, want at most 20 with KeepAnswered 10", n)
	}
	if len(c.answered) > 20 {
		t.Errorf("answered = %d, want at most 20", len(c.answered))
	}
	if c.Answered(`s:r999`) == nil {
		t.Errorf("the latest answered exchange was forgotten")
	}
	if p := c.Pending(); len(p) != 1 || p[0].Key != "s:open" {
		t.Errorf("Pending() = %v, want the open request", p)
	}
	unbounded := NewEngine(Config{KeepAnswered: -1}, nil)
	for i := range 100 {
		id := fmt.Sprintf(`"r%d"`, i)
		unbounded.Feed(&Frame{Dir: FromHarness, Raw: []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"m","params":{}}`)})
		unbounded.Feed(&Frame{Dir: FromBackend, Raw: []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)})
	}
	if n := len(unbounded.Conversation().Exchanges()); n != 100 {
		t.Errorf("with KeepAnswered -1: Exchanges() = %d, want 100", n)
	}
}

func TestMemoryStoreIsBounded(t *testing.T) {
	s := &MemoryStore{Max: 3}
	for i := range 10 {
		s.Store(EventKey{Source: "s", ID: fmt.Sprint(i)}, EventRecord{Seq: uint64(i)})
	}
	if s.Len() != 3 {
		t.Errorf("store holds %d events, want 3", s.Len())
	}
	if _, ok := s.Load(EventKey{Source: "s", ID: "9"}); !ok {
		t.Errorf("the newest event was forgotten")
	}
	if _, ok := s.Load(EventKey{Source: "s", ID: "0"}); ok {
		t.Errorf("the oldest event is still there")
	}
}
