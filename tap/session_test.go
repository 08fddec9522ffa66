package tap

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// testRules is a RuleSet of rules made by fn and one registration finding.
type testRules struct {
	fn func() []Rule
}

func (r testRules) Rules() []Rule { return r.fn() }
func (r testRules) Registration(doc *Value, snapshot string) []Finding {
	return []Finding{{Check: "BASE-5", Level: Error, Message: "registration judged for " + snapshot}}
}

// unsolicitedRule reports a response that answers no request, unless the
// conversation is an excerpt; it waits for gate (when set) on requests.
type unsolicitedRule struct {
	gate    chan struct{}
	started chan struct{}
	once    *sync.Once
}

func (r unsolicitedRule) Info() RuleInfo {
	return RuleInfo{ID: "TEST/unsolicited", Check: "CORR-2", Level: Error}
}
func (r unsolicitedRule) Check(c *Conversation, f *Frame) []Finding {
	if _, ok := f.Msg.(*Request); ok && r.gate != nil {
		r.once.Do(func() { close(r.started) })
		<-r.gate
	}
	if c.Correlation() == Unsolicited && !c.Partial {
		return []Finding{{Check: "CORR-2", Level: Error, Seq: f.Seq, Message: "unsolicited " + string(f.Raw)}}
	}
	return nil
}

// memRecorder keeps what a session recorded, in order.
type memRecorder struct {
	mu    sync.Mutex
	items []Item
}

func (m *memRecorder) Record(f *Frame) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := *f
	m.items = append(m.items, Item{Frame: &cp})
}

func (m *memRecorder) RecordNote(n Note) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items = append(m.items, Item{Note: &n})
}

func req(id string) *Frame {
	return &Frame{Dir: FromHarness, Transport: Stdio, Conn: "p", Raw: []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{}}`)}
}

func resp(id string) *Frame {
	return &Frame{Dir: FromBackend, Transport: Stdio, Conn: "p", Raw: []byte(`{"jsonrpc":"2.0","id":"` + id + `","result":{}}`)}
}

// TestSessionDropsAreRecordedAndReplayed drops a request under a full
// audit queue and audits its response: live, the session records the drop
// as a note before the response, so the conversation is an excerpt (no
// CORR-2 for the response) and TAP-1 counts the drop; fed the recording,
// a fresh session gives the same findings.
func TestSessionDropsAreRecordedAndReplayed(t *testing.T) {
	defer goleak.VerifyNone(t)
	gate, started := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rec := &memRecorder{}
	var live findingList
	s := NewSession(SessionConfig{Config: Config{Transport: Stdio}, Conn: "p", Sink: &live, Recorder: rec,
		Rules: testRules{func() []Rule { return []Rule{unsolicitedRule{gate, started, &once}} }}})
	a := s.Audit(AuditorConfig{Queue: 1})
	a.Submit(req("a"))
	<-started // the audit goroutine holds a; the queue is empty
	if !a.Submit(req("b")) || a.Submit(req("c")) {
		t.Fatal("want b queued and c dropped")
	}
	close(gate)
	a.Note(Note{Kind: NoteStart, Conn: "p"}) // waits until a and b are checked
	a.Submit(resp("c"))
	a.Close()

	var notes []Note
	for _, it := range rec.items {
		if it.Note != nil && it.Note.Kind == NoteDropped {
			notes = append(notes, *it.Note)
		}
	}
	if len(notes) != 1 || notes[0].Count != 1 || notes[0].Conn != "p" {
		t.Fatalf("recorded drop notes %+v, want one of 1 frame on conn p", notes)
	}
	checks := func(fs []Finding) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Check+": "+f.Message)
		}
		return strings.Join(out, "\n")
	}
	want := "TAP-1: 1 frames not audited: the audit queue was full and ahp-tap dropped its copy (forwarding was not affected)"
	if got := checks(live.fs); got != want {
		t.Errorf("live findings:\n%s\nwant only:\n%s", got, want)
	}

	var replayed findingList
	r := NewSession(SessionConfig{Config: Config{Transport: Stdio}, Sink: &replayed,
		Rules: testRules{func() []Rule { return []Rule{unsolicitedRule{}} }}})
	for _, it := range rec.items {
		if it.Frame != nil {
			r.Frame(it.Frame)
		} else {
			r.Note(*it.Note)
		}
	}
	r.Close()
	if got := checks(replayed.fs); got != want {
		t.Errorf("replayed findings:\n%s\nwant the live ones:\n%s", got, want)
	}

	// Without the drop note the same frames give the CORR-2 a replay of
	// an older capture reported: the note is what makes them agree.
	var bare findingList
	b := NewSession(SessionConfig{Config: Config{Transport: Stdio}, Sink: &bare,
		Rules: testRules{func() []Rule { return []Rule{unsolicitedRule{}} }}})
	for _, it := range rec.items {
		if it.Frame != nil {
			b.Frame(it.Frame)
		}
	}
	b.Close()
	if got := checks(bare.fs); !strings.Contains(got, `CORR-2: unsolicited {"jsonrpc":"2.0","id":"c"`) {
		t.Errorf("without the drop note: %s; want CORR-2 for the response to c", got)
	}
}

// TestSessionEnginesPerProcess checks that on stdio each process is a
// conversation of its own while every process shares the event store,
// and that on HTTP one conversation spans connections.
func TestSessionEnginesPerProcess(t *testing.T) {
	ev := `{"jsonrpc":"2.0","id":"1","method":"hooks/intercept","params":{"event":{"id":"e1","source":"urn:x"}}}`
	type seen struct {
		corr  Correlation
		prior bool
	}
	run := func(tr Transport) []seen {
		var out []seen
		rule := ruleFunc(func(c *Conversation, f *Frame) []Finding {
			out = append(out, seen{c.Correlation(), c.PriorEvent() != nil})
			return nil
		})
		s := NewSession(SessionConfig{Config: Config{Transport: tr}, Rules: testRules{func() []Rule { return []Rule{rule} }}})
		s.Frame(&Frame{Dir: FromHarness, Conn: "p1", Raw: []byte(ev)})
		s.Frame(&Frame{Dir: FromHarness, Conn: "p2", Raw: []byte(ev)})
		s.Frame(&Frame{Dir: FromBackend, Conn: "p2", Raw: []byte(`{"jsonrpc":"2.0","id":"1","result":{}}`)})
		s.Frame(&Frame{Dir: FromBackend, Conn: "p1", Raw: []byte(`{"jsonrpc":"2.0","id":"1","result":{}}`)})
		s.Close()
		return out
	}
	// stdio: p2's delivery is a retry of p1's event (shared store); each
	// process's response answers its own request.
	if got := run(Stdio); got[1] != (seen{NotAResponse, true}) || got[2].corr != Matched || got[3].corr != Matched {
		t.Errorf("stdio: %+v; want the second delivery seen as a retry and both responses matched in their own process", got)
	}
	// http: one conversation; the second response is a duplicate.
	if got := run(HTTP); got[2].corr != Matched || got[3].corr != Duplicate {
		t.Errorf("http: %+v; want one conversation (matched, then duplicate)", got)
	}
}

type ruleFunc func(c *Conversation, f *Frame) []Finding

func (ruleFunc) Info() RuleInfo                              { return RuleInfo{ID: "TEST/func", Check: "TEST"} }
func (r ruleFunc) Check(c *Conversation, f *Frame) []Finding { return r(c, f) }

func TestSessionRegistrationFindingsOnce(t *testing.T) {
	reg, _, _ := ParseJSON([]byte(`{"hooks":[{"id":"h","transport":{"type":"stdio","lifecycle":"per_event"}}]}`))
	var sink findingList
	rs := testRules{func() []Rule { return nil }}
	s := NewSession(SessionConfig{Config: Config{Registration: reg, HookID: "h", Transport: Stdio}, Rules: rs, Sink: &sink})
	s.Frame(&Frame{Dir: FromHarness, Raw: []byte(`{}`)})
	s.Close()
	if len(sink.fs) != 1 || sink.fs[0].Message != "registration judged for draft" {
		t.Errorf("findings %v, want the registration's one finding, once, for the default snapshot", sink.fs)
	}
	if got := s.Config().Lifecycle; got != LifecyclePerEvent {
		t.Errorf("lifecycle = %q, want the hook's per_event", got)
	}
	sink.fs = nil
	NewSession(SessionConfig{Config: Config{Registration: reg}, Rules: rs, Sink: &sink, RegistrationReported: true}).Close()
	if len(sink.fs) != 0 {
		t.Errorf("RegistrationReported: findings %v, want none", sink.fs)
	}
}

// TestSessionFacts checks what a session says of its configuration
// (one policy for "has a deadline", "has a registration") and its traffic.
func TestSessionFacts(t *testing.T) {
	reg, _, _ := ParseJSON([]byte(`{"hooks":[{"id":"h","transport":{"lifecycle":"per_event"},"subscriptions":[{"mode":"intercept","events":["*"],"timeoutMs":100}]},{"id":"g","subscriptions":[{"mode":"intercept","events":["*"]}]}]}`))
	for _, c := range []struct {
		name string
		cfg  SessionConfig
		want Facts
	}{
		{"bare stdio", SessionConfig{Config: Config{Transport: Stdio}}, Facts{Transport: Stdio}},
		{"hook with timeoutMs", SessionConfig{Config: Config{Transport: Stdio, Registration: reg, HookID: "h"}},
			Facts{Transport: Stdio, Registration: true, Hook: true, Deadline: true, Lifecycle: LifecyclePerEvent}},
		{"shared events", SessionConfig{Config: Config{Transport: Stdio, Registration: reg, HookID: "h"}, SharedEvents: true},
			Facts{Transport: Stdio, Registration: true, Hook: true, Deadline: true, Lifecycle: LifecyclePerEvent, SharedEvents: true}},
		{"hook without timeoutMs", SessionConfig{Config: Config{Transport: HTTP, Registration: reg, HookID: "g"}},
			Facts{Transport: HTTP, Registration: true, Hook: true}},
		{"registration without hook", SessionConfig{Config: Config{Transport: HTTP, Registration: reg}}, Facts{Transport: HTTP, Registration: true}},
		{"timeout", SessionConfig{Config: Config{Transport: HTTP, Timeout: time.Second}}, Facts{Transport: HTTP, Deadline: true}},
	} {
		if got := NewSession(c.cfg).Facts(); got != c.want {
			t.Errorf("%s: facts %+v, want %+v", c.name, got, c.want)
		}
	}
	s := NewSession(SessionConfig{Config: Config{Transport: Stdio}})
	s.Stream("p", 0, time.Time{}, []byte(`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"event":{"id":"e1","type":"user.elicitation.request"}}}`+"\n"+
		`{"jsonrpc":"2.0","id":"e1","result":{"effects":[{"type":"modify"}]}}`+"\n"+
		`{"jsonrpc":"2.0","method":"hooks/observe","params":{"event":{"id":"e2","type":"tool.after"}}}`+"\n"))
	s.Close()
	want := Facts{Transport: Stdio, Frames: 3, Harness: 2, Backend: 1, Intercepts: 1, Observes: 1, Events: 2, Elicitations: 1,
		Answers: 1, Effects: 1, Modifies: 1}
	if got := s.Facts(); got != want {
		t.Errorf("traffic facts %+v, want %+v", got, want)
	}
}

// TestSessionStream checks that a stream is cut into numbered lines with
// their senders guessed, and that EOF checks a last unterminated line.
func TestSessionStream(t *testing.T) {
	var got []*Frame
	rule := ruleFunc(func(c *Conversation, f *Frame) []Finding { got = append(got, f); return nil })
	s := NewSession(SessionConfig{Config: Config{Transport: Stdio}, MaxLine: 8, Rules: testRules{func() []Rule { return []Rule{rule} }}})
	t0 := time.Unix(100, 0)
	s.Stream("c", 0, t0, []byte("{\"id\":1,\"method\":\"m\"}\r\n{\"id\":"))
	s.Stream("c", 0, t0, []byte("1}\n[1]"))
	s.Note(Note{Kind: NoteEOF, Conn: "c", Time: t0.Add(time.Second)})
	s.Close()
	if len(got) != 3 {
		t.Fatalf("frames %d, want 3", len(got))
	}
	// A truncated copy is never decoded, so its sender cannot be guessed
	// from a method: it counts as the backend's.
	// Its size leaves out the "\r" of its "\r\n", as an untruncated line's does.
	if f := got[0]; f.Seq != 1 || f.Dir != FromBackend || !f.Truncated || f.Size != 21 || len(f.Raw) != 8 || !f.Framing.CRLF {
		t.Errorf("frame 1 = seq %d dir %v truncated %v size %d crlf %v raw %q; want a truncated 8-byte copy of a 21-byte CRLF line", f.Seq, f.Dir, f.Truncated, f.Size, f.Framing.CRLF, f.Raw)
	}
	if f := got[1]; f.Seq != 2 || f.Dir != FromBackend || string(f.Raw) != `{"id":1}` {
		t.Errorf("frame 2 = seq %d dir %v %q; want the response line whole", f.Seq, f.Dir, f.Raw)
	}
	if f := got[2]; string(f.Raw) != "[1]" || !f.Framing.Unterminated || !f.Time.Equal(t0.Add(time.Second)) {
		t.Errorf("frame 3 = %q %+v at %v; want the unterminated last line at the EOF's time", f.Raw, f.Framing, f.Time)
	}
}

// ruleList is a RuleSet of the given rules (the same instances for every
// engine) that judges no registration.
func ruleList(rules []Rule) RuleSet { return fixedRules(rules) }

type fixedRules []Rule

func (r fixedRules) Rules() []Rule                         { return r }
func (r fixedRules) Registration(*Value, string) []Finding { return nil }
