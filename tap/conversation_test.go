package tap

import (
	"fmt"
	"testing"
	"time"
)

// probe records what the conversation said about each frame.
type probe struct{ seen *[]probeRecord }

type probeRecord struct {
	corr  Correlation
	x     *Exchange
	prior *EventRecord
}

func (p probe) Info() RuleInfo { return RuleInfo{ID: "TEST/probe", Check: "TEST"} }
func (p probe) Check(c *Conversation, f *Frame) []Finding {
	*p.seen = append(*p.seen, probeRecord{c.Correlation(), c.Exchange(), c.PriorEvent()})
	return nil
}

func feedAll(cfg Config, raws ...string) ([]probeRecord, *Engine) {
	var seen []probeRecord
	e := NewEngine(cfg, []Rule{probe{&seen}})
	for _, r := range raws {
		e.Feed(&Frame{Raw: []byte(r)})
	}
	return seen, e
}

func TestCorrelationNeverCoercesIDs(t *testing.T) {
	seen, e := feedAll(Config{},
		`{"jsonrpc":"2.0","id":1,"method":"hooks/capabilities","params":{}}`,
		`{"jsonrpc":"2.0","id":"1","result":{}}`,
		`{"jsonrpc":"2.0","id":1.0,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	)
	want := []Correlation{NotAResponse, Unsolicited, Unsolicited, Matched, Duplicate}
	for i, w := range want {
		if seen[i].corr != w {
			t.Errorf("frame %d: Correlation() = %d, want %d", i+1, seen[i].corr, w)
		}
	}
	if x := seen[3].x; x == nil || x.Method != "hooks/capabilities" || x.Request == nil || x.Request.Seq != 1 {
		t.Errorf("matched response's Exchange() = %+v, want the request #1", x)
	}
	if p := e.Conversation().Pending(); len(p) != 0 {
		t.Errorf("Pending() = %v after the answer, want none", p)
	}
}

func TestPendingUntilAnswered(t *testing.T) {
	_, e := feedAll(Config{},
		`{"jsonrpc":"2.0","id":"a","method":"hooks/intercept","params":{}}`,
		`{"jsonrpc":"2.0","id":"b","method":"hooks/intercept","params":{}}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
	)
	p := e.Conversation().Pending()
	if len(p) != 1 || p[0].Key != IDKey(&Value{Kind: String, Str: "b"}) {
		t.Errorf("Pending() = %v, want only \"b\"", p)
	}
	if len(e.Conversation().Exchanges()) != 2 {
		t.Errorf("Exchanges() = %d, want 2", len(e.Conversation().Exchanges()))
	}
}

func TestPriorEventByEventIdentity(t *testing.T) {
	ev := func(id, src, cmd string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"event":{"id":"` + id +
			`","source":"` + src + `","type":"tool.before","tool":{"input":{"command":"` + cmd + `"}}}}}`
	}
	seen, _ := feedAll(Config{},
		ev("e1", "urn:a", "ls"),
		ev("e1", "urn:b", "ls"),       // other source: another event
		ev("e1", "urn:a", "rm -rf /"), // retry of (urn:a, e1) with other content
	)
	if seen[0].prior != nil || seen[1].prior != nil {
		t.Errorf("first sightings have a prior event: %+v %+v", seen[0].prior, seen[1].prior)
	}
	pr := seen[2].prior
	if pr == nil || pr.Seq != 1 || pr.Type != "tool.before" || pr.Digest == "" {
		t.Fatalf("retry's PriorEvent() = %+v, want the first sighting (#1)", pr)
	}
	first, _, _ := ParseJSON([]byte(ev("e1", "urn:a", "rm -rf /")))
	if pr.Digest == first.Path("params", "event").Digest() {
		t.Error("the prior digest must be the first sighting's, not the retry's")
	}
}

func TestExchangeDeadlineFromRegistration(t *testing.T) {
	reg, _, err := ParseJSON([]byte(`{"hooks":[{"id":"h","transport":{"type":"stdio","lifecycle":"per_event"},
		"subscriptions":[{"events":["tool.*"],"mode":"intercept","timeoutMs":750},{"events":["*"],"mode":"observe"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Registration: reg, HookID: "h", Timeout: 5 * time.Second}
	seen, e := feedAll(cfg,
		`{"jsonrpc":"2.0","id":"1","method":"hooks/intercept","params":{"event":{"type":"tool.before"}}}`,
		`{"jsonrpc":"2.0","id":"2","method":"hooks/intercept","params":{"event":{"type":"turn.start"}}}`,
	)
	if e.Conversation().Lifecycle != "per_event" || e.Conversation().Hook == nil {
		t.Errorf("Lifecycle = %q, Hook = %v; want per_event from the hook", e.Conversation().Lifecycle, e.Conversation().Hook)
	}
	if x := seen[0].x; x.Subscription == nil || x.Deadline != 750*time.Millisecond {
		t.Errorf("tool.before: Subscription %v, Deadline %v; want the tool.* subscription and 750ms", x.Subscription, x.Deadline)
	}
	if x := seen[1].x; x.Subscription != nil || x.Deadline != 5*time.Second {
		t.Errorf("turn.start: Subscription %v, Deadline %v; want none and the --timeout", x.Subscription, x.Deadline)
	}
}

func TestEventPatternMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, event string
		want           bool
	}{
		{"*", "tool.before", true},
		{"tool.*", "tool.before", true},
		{"tool.*", "tool.permission.request", true},
		{"tool.*", "toolbox.open", false},
		{"tool.before", "tool.before", true},
		{"tool.before", "tool.after", false},
		{"tool", "tool.before", false},
	} {
		if got := EventPatternMatches(tc.pattern, tc.event); got != tc.want {
			t.Errorf("EventPatternMatches(%q, %q) = %v, want %v", tc.pattern, tc.event, got, tc.want)
		}
	}
	if FindHook(nil, "x") != nil || MatchSubscription(nil, "tool.before", "intercept") != nil {
		t.Error("absent registration or hook must match nothing")
	}
}

// A long-running link answers every request: the queue of pending
// requests holds only what is pending, not every request ever sent (it
// held every exchange, 1 GB in 10 minutes of an HTTP tap). One request
// left unanswered at the start does not keep the answered ones after it.
func TestPendingQueueForgetsAnswered(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	e := NewEngine(Config{}, nil)
	e.Feed(&Frame{Raw: []byte(`{"jsonrpc":"2.0","id":"never","method":"hooks/intercept","params":{}}`)})
	for i := range 20000 {
		id := fmt.Sprintf(`"r%d"`, i)
		e.Feed(&Frame{Raw: []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"hooks/intercept","params":{}}`)})
		e.Feed(&Frame{Raw: []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)})
	}
	c := e.Conversation()
	if n := len(c.pendingQueue) - c.pendingHead; n > 2*len(c.pending)+1024+1 {
		t.Errorf("the pending queue holds %d entries for %d pending requests", n, len(c.pending))
	}
	if p := c.Pending(); len(p) != 1 || p[0].Key != IDKey(&Value{Kind: String, Str: "never"}) {
		t.Errorf("Pending() = %d exchanges, want only \"never\"", len(p))
	}
	if n := len(c.Exchanges()); n > 2*DefaultKeepAnswered+1 {
		t.Errorf("the conversation holds %d exchanges, want at most about %d", n, DefaultKeepAnswered)
	}
}
