package tap

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/vocab"
	"go.uber.org/goleak"
)

// gateRule blocks in Check until gate is closed, and counts frames.
type gateRule struct {
	gate chan struct{}
	seen *atomic.Int64
}

func (r gateRule) Info() RuleInfo {
	return RuleInfo{ID: "TEST/gate", Check: "TEST", Level: Info, Summary: "test"}
}

func (r gateRule) Check(c *Conversation, f *Frame) []Finding {
	<-r.gate
	r.seen.Add(1)
	return nil
}

// noteRule records the order of frames and notes.
type noteRule struct{ log *[]string }

func (r noteRule) Info() RuleInfo { return RuleInfo{ID: "TEST/note", Check: "TEST", Level: Info} }
func (r noteRule) Check(c *Conversation, f *Frame) []Finding {
	*r.log = append(*r.log, string(f.Raw))
	return nil
}
func (r noteRule) Note(c *Conversation, n Note) []Finding {
	*r.log = append(*r.log, "note:"+string(n.Kind))
	return []Finding{{Check: "TEST", Level: Info, Message: "noted"}}
}

type findingList struct {
	mu sync.Mutex
	fs []Finding
}

func (l *findingList) Write(f Finding) {
	l.mu.Lock()
	l.fs = append(l.fs, f)
	l.mu.Unlock()
}

func TestAuditorDropsWhenFullAndCloseDrains(t *testing.T) {
	defer goleak.VerifyNone(t)
	gate := make(chan struct{})
	var seen atomic.Int64
	var sink findingList
	a := NewSession(SessionConfig{Rules: ruleList([]Rule{gateRule{gate, &seen}}), Sink: &sink}).Audit(AuditorConfig{Queue: 8})
	accepted := 0
	for range 100 {
		if a.Submit(&Frame{Raw: []byte(`{}`)}) {
			accepted++
		}
	}
	// The audit goroutine holds at most one frame, the queue 8.
	if accepted > 9 || a.Dropped() != uint64(100-accepted) {
		t.Errorf("accepted %d, dropped %d; want at most 9 accepted and the rest counted", accepted, a.Dropped())
	}
	close(gate)
	a.Close()
	a.Close() // idempotent
	if int(seen.Load()) != accepted {
		t.Errorf("checked %d frames, want every accepted one (%d)", seen.Load(), accepted)
	}
	if a.Submit(&Frame{}) {
		t.Error("Submit after Close = true")
	}
	var drop *Finding
	for i := range sink.fs {
		if sink.fs[i].Check == "TAP-1" {
			drop = &sink.fs[i]
		}
	}
	if drop == nil || drop.Level != Warn {
		t.Fatalf("findings %v: want one TAP-1 warn for the drops", sink.fs)
	}
}

func TestAuditorNotesInOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	var log []string
	var sink findingList
	a := NewSession(SessionConfig{Rules: ruleList([]Rule{noteRule{&log}}), Sink: &sink}).Audit(AuditorConfig{Queue: 0})
	a.Submit(&Frame{Raw: []byte("1")})
	a.Submit(&Frame{Raw: []byte("2")})
	a.Note(Note{Kind: NoteEOF})
	a.Submit(&Frame{Raw: []byte("3")})
	a.Close()
	if got := len(log); got != 4 || log[2] != "note:eof" || log[3] != "3" {
		t.Errorf("order = %v, want 1 2 note:eof 3", log)
	}
	if len(sink.fs) != 1 || sink.fs[0].Message != "noted" {
		t.Errorf("findings = %v, want the note rule's finding", sink.fs)
	}
	a.Note(Note{Kind: NoteEnd}) // after Close: does nothing, does not hang
}

// panicRule panics on every frame.
type panicRule struct{}

func (panicRule) Info() RuleInfo                            { return RuleInfo{ID: "TEST/panic", Check: "TEST"} }
func (panicRule) Check(c *Conversation, f *Frame) []Finding { panic("boom") }
func (panicRule) Finish(c *Conversation) []Finding          { panic("boom at end") }

func TestEnginePanickingRule(t *testing.T) {
	e := NewEngine(Config{}, []Rule{panicRule{}})
	fs := e.Feed(&Frame{Raw: []byte(`{}`)})
	if len(fs) != 1 || fs[0].Check != "TAP-2" || fs[0].Level != Error || fs[0].Seq != 1 {
		t.Errorf("Feed with a panicking rule = %v, want one TAP-2 error about frame 1", fs)
	}
	if fs := e.Finish(); len(fs) != 1 || fs[0].Check != "TAP-2" {
		t.Errorf("Finish with a panicking rule = %v, want one TAP-2", fs)
	}
	if fs := e.Finish(); len(fs) != 0 {
		t.Errorf("second Finish = %v, want nothing", fs)
	}
}

func TestEngineTruncatedFrame(t *testing.T) {
	e := NewEngine(Config{}, nil)
	fs := e.Feed(&Frame{Raw: []byte(`{"jsonrpc":`), Truncated: true, Size: 5 << 20})
	if len(fs) != 1 || fs[0].Check != "TAP-1" || fs[0].Level != Warn {
		t.Errorf("Feed(truncated) = %v, want one TAP-1 warn", fs)
	}
	if fs := e.Feed(&Frame{Raw: []byte(`{}`)}); len(fs) != 0 {
		t.Errorf("Feed(whole frame) = %v, want nothing", fs)
	}
}

// countRule reports one finding per frame under its own check.
type countRule struct{ check vocab.CheckID }

func (r countRule) Info() RuleInfo { return RuleInfo{ID: string(r.check) + "/count", Check: r.check} }
func (r countRule) Check(c *Conversation, f *Frame) []Finding {
	return []Finding{{Check: string(r.check), Level: Info, Message: "counted"}}
}

// TestEnginePanicKeepsTheOtherRules: a rule that panics becomes a TAP-2
// finding in its place; the findings of the rules before it are kept and
// the rules after it still run, on every frame.
func TestEnginePanicKeepsTheOtherRules(t *testing.T) {
	e := NewEngine(Config{}, []Rule{countRule{"A"}, panicRule{}, countRule{"B"}, panicRule{}, countRule{"C"}})
	for i := range 3 {
		var got []string
		for _, fd := range e.Feed(&Frame{Raw: []byte(`{}`)}) {
			got = append(got, string(fd.Check))
		}
		if want := []string{"A", "TAP-2", "B", "TAP-2", "C"}; !slices.Equal(got, want) {
			t.Errorf("frame %d: findings %v, want %v", i+1, got, want)
		}
	}
}

// TestAuditorClockWaitsForQueuedFrames: the auditor tells its session the
// time only with its queue empty. An intercept answered in time, whose
// answer waits in the queue while the audit goroutine is busy past the
// request's deadline, must be judged on its answer, not by a deadline
// note told ahead of it (the false CORR-3 that a loaded HTTP tap logged:
// the select between a ready queue and a fired timer picks either).
func TestAuditorClockWaitsForQueuedFrames(t *testing.T) {
	defer goleak.VerifyNone(t)
	request := func(id string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id + `","type":"tool.before"}}}`)
	}
	for round := range 20 {
		var log []string
		gate := make(chan struct{})
		taken := func(f *Frame) {
			if string(f.Raw) == string(request("b")) {
				<-gate // busy with b while a's answer waits behind it
			}
		}
		s := NewSession(SessionConfig{Config: Config{Timeout: 40 * time.Millisecond}, Rules: ruleList([]Rule{noteRule{&log}}), Sink: &findingList{}})
		a := s.Audit(AuditorConfig{Queue: 8, Taken: taken, Clock: func(now time.Time) time.Time { return now }})
		t0 := time.Now()
		answer := []byte(`{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":"draft","effects":[]}}`)
		a.Submit(&Frame{Dir: FromHarness, Time: t0, Raw: request("a")})
		a.Submit(&Frame{Dir: FromHarness, Time: t0, Raw: request("b")})
		a.Submit(&Frame{Dir: FromBackend, Time: t0.Add(time.Millisecond), Raw: answer})
		time.Sleep(100 * time.Millisecond) // a's deadline and the grace pass
		close(gate)
		a.Close()
		ans := slices.Index(log, string(answer))
		note := slices.Index(log, "note:"+string(NoteDeadline))
		if ans < 0 || (note >= 0 && note < ans) {
			t.Fatalf("round %d: audited %q: a deadline note came before the queued answer to a", round, log)
		}
	}
}

// noteSink passes on the findings the rules made of deadline notes
// (noteRule's "noted").
type noteSink chan Finding

func (s noteSink) Write(f Finding) {
	if f.Message == "noted" {
		s <- f
	}
}

// TestAuditorClockAfterABurst: items the audit goroutine finds waiting
// are taken without the deadline timer; once the queue runs empty, the
// timer is armed again and the deadline of the intercept still pending
// is told as it passes (a deadline note, CORR-3's cue).
func TestAuditorClockAfterABurst(t *testing.T) {
	defer goleak.VerifyNone(t)
	request := []byte(`{"jsonrpc":"2.0","id":"a","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"a","type":"tool.before"}}}`)
	var log []string
	gate := make(chan struct{})
	taken := func(f *Frame) {
		if string(f.Raw) == string(request) {
			<-gate // the burst queues behind the request
		}
	}
	noted := make(noteSink, 8)
	s := NewSession(SessionConfig{Config: Config{Timeout: 30 * time.Millisecond}, Rules: ruleList([]Rule{noteRule{&log}}), Sink: noted})
	a := s.Audit(AuditorConfig{Queue: 16, Taken: taken, Clock: func(now time.Time) time.Time { return now }})
	defer a.Close()
	t0 := time.Now()
	a.Submit(&Frame{Dir: FromHarness, Time: t0, Raw: request})
	for i := range 5 {
		a.Submit(&Frame{Dir: FromHarness, Time: t0, Raw: []byte(`{"jsonrpc":"2.0","method":"hooks/observe","params":{"n":` + strconv.Itoa(i) + `}}`)})
	}
	close(gate)
	select {
	case <-noted:
	case <-time.After(10 * time.Second): // a bound on a hang, not a measurement
		t.Fatal("no deadline note 10 s after a deadline of 30 ms: the timer was not armed once the queue ran empty")
	}
}

// clockWatcher is a Clocker that passes on the times it is told.
type clockWatcher chan time.Time

func (clockWatcher) Judged(*Frame, *Exchange) {}
func (c clockWatcher) Clock(t time.Time) {
	select {
	case c <- t:
	default:
	}
}

// TestAuditorTellsAClockerWhileQuiet: with no intercept pending, a
// session watched by a Clocker is still told the time while its queue is
// empty (the live conduct client's clock), the time the source vouches
// for; a session with no Clocker has no reason to wake (NextClock zero).
func TestAuditorTellsAClockerWhileQuiet(t *testing.T) {
	defer goleak.VerifyNone(t)
	if next := NewSession(SessionConfig{Sink: &findingList{}}).NextClock(); !next.IsZero() {
		t.Errorf("no Clocker, no deadline: NextClock %v, want zero", next)
	}
	told := make(clockWatcher, 1)
	s := NewSession(SessionConfig{Sink: &findingList{}, Watch: told})
	vouched := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	a := s.Audit(AuditorConfig{Queue: 8, Clock: func(time.Time) time.Time { return vouched }})
	defer a.Close()
	select {
	case got := <-told:
		if !got.Equal(vouched) {
			t.Errorf("told %v, want the time the source vouches for, %v", got, vouched)
		}
	case <-time.After(10 * time.Second): // a bound on a hang, not a measurement
		t.Fatal("a quiet session's Clocker was never told the time")
	}
}

// TestAuditorAsksAgainLaterWhenTheSourceVouchesShort: an intercept's
// deadline has passed, but the source vouches only for a time before it
// (the HTTP proxy while a response is still streaming in, holding the
// clock at its head). The auditor must ask again after ClockRetry, not at
// once: before, it asked in a busy loop until the source let go (700 ms
// of CPU in a 2 s response). A lower bound on the gaps between asks
// cannot fail on a slow machine.
func TestAuditorAsksAgainLaterWhenTheSourceVouchesShort(t *testing.T) {
	defer goleak.VerifyNone(t)
	request := []byte(`{"jsonrpc":"2.0","id":"a","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"a","type":"tool.before"}}}`)
	t0 := time.Now()
	asked := make(chan time.Time, 64)
	s := NewSession(SessionConfig{Config: Config{Timeout: 10 * time.Millisecond}, Rules: ruleList(nil), Sink: &findingList{}})
	a := s.Audit(AuditorConfig{Queue: 8, Clock: func(time.Time) time.Time {
		select {
		case asked <- time.Now():
		default:
		}
		return t0 // never past the request: the deadline stays due
	}})
	defer a.Close()
	a.Submit(&Frame{Dir: FromHarness, Time: t0, Raw: request})
	var prev time.Time
	for i := range 6 {
		select {
		case at := <-asked:
			if i > 0 && at.Sub(prev) < ClockRetry {
				t.Fatalf("asked again %v after the source vouched short, want at least ClockRetry (%v)", at.Sub(prev), ClockRetry)
			}
			prev = at
		case <-time.After(10 * time.Second): // a bound on a hang, not a measurement
			t.Fatal("the auditor stopped asking its Clock while a deadline was due")
		}
	}
}
