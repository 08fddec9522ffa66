package rules

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/e2e"
	"github.com/ahp-tap/ahp-tap/internal/norace"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Builders for the conversation-level tests (BASE-2..9, CORR-1..3).

// t0 is the time of a test conversation's first frame.
var t0 = time.Date(2026, 8, 24, 8, 51, 14, 0, time.UTC)

// atMs sets f's time to t0 plus ms milliseconds and returns f.
func atMs(f *tap.Frame, ms int) *tap.Frame {
	f.Time = t0.Add(time.Duration(ms) * time.Millisecond)
	return f
}

// onConn sets f's connection and returns f.
func onConn(f *tap.Frame, conn string) *tap.Frame {
	f.Conn = conn
	return f
}

// convEvent is a valid tool.before-like event of type typ with id id; more
// holds extra members (",\"k\":v" text) appended to the event object.
func convEvent(id, typ, more string) string {
	return fmt.Sprintf(`{"id":%q,"source":"https://harness.example/runtime/42","type":%q,"time":"2026-08-24T08:51:14Z","harness":{"name":"h","version":"1"},"session":{"id":"s1"},"call":{"id":"c1"}%s}`, id, typ, more)
}

// convIntercept is a hooks/intercept request whose JSON-RPC id is id.
func convIntercept(id, event, caps string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"hooks/intercept","params":{"protocolVersion":"draft","event":%s,"capabilities":%s}}`, id, event, caps)
}

// convObserve is a hooks/observe notification.
func convObserve(event string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":%s}}`, event)
}

// convResult is a success response with the given effects.
func convResult(id, effects string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"protocolVersion":"draft","effects":%s}}`, id, effects)
}

// convError is an error response.
func convError(id string, code int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"error":{"code":%d,"message":"m"}}`, id, code)
}

const denyCaps = `{"effects":["deny"]}`

// exchangesOf runs frames through rules and returns the engine's exchanges
// after Finish.
func exchangesOf(cfg tap.Config, rs []tap.Rule, frames ...*tap.Frame) ([]*tap.Exchange, []tap.Finding) {
	e := tap.NewEngine(cfg, rs)
	var out []tap.Finding
	for _, f := range frames {
		out = append(out, e.Feed(f)...)
	}
	out = append(out, e.Finish()...)
	return e.Conversation().Exchanges(), out
}

func TestIDEqualsEvent(t *testing.T) {
	ev := convEvent("evt_1", "tool.before", "")
	tests := []struct {
		name string
		js   string
		want int
	}{
		{"equal", convIntercept("evt_1", ev, denyCaps), 0},
		{"different", convIntercept("evt_2", ev, denyCaps), 1},
		{"integer id", `{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","params":{"protocolVersion":"draft","event":` + ev + `,"capabilities":{"effects":["deny"]}}}`, 1},
		{"capabilities id is free", `{"jsonrpc":"2.0","id":"discovery","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`, 0},
		{"no event id is EVT-1's", convIntercept("x", `{"type":"tool.before"}`, denyCaps), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Partial: true}, correlationRules(), harnessFrame(tt.js))
			wantFindings(t, fs, "CORR-1", tt.want)
		})
	}
}

func TestAnsweredOnce(t *testing.T) {
	req := func() *tap.Frame {
		return harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps))
	}
	res := func(id string) *tap.Frame { return backendFrame(convResult(id, `[]`)) }
	tests := []struct {
		name    string
		partial bool
		frames  []*tap.Frame
		want    int
	}{
		{"answered once", false, []*tap.Frame{req(), res("e1")}, 0},
		{"unanswered at end", false, []*tap.Frame{req()}, 1},
		{"answered twice", false, []*tap.Frame{req(), res("e1"), res("e1")}, 1},
		{"retry: both copies answered", false, []*tap.Frame{req(), req(), res("e1"), res("e1")}, 0},
		{"retry: three answers to two copies", false, []*tap.Frame{req(), req(), res("e1"), res("e1"), res("e1")}, 1},
		{"retry: only the retry answered", false, []*tap.Frame{req(), req(), res("e1")}, 0},
		{"unknown id", false, []*tap.Frame{req(), res("e1"), res("zz")}, 1},
		{"numeric id is not the string id", false, []*tap.Frame{req(), backendFrame(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"draft","effects":[]}}`)}, 2},
		{"excerpt: lone request", true, []*tap.Frame{req()}, 0},
		{"excerpt: lone response", true, []*tap.Frame{res("e1")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Partial: tt.partial}, correlationRules(), tt.frames...)
			wantFindings(t, fs, "CORR-2", tt.want)
		})
	}
}

func TestAnsweredOnceNotes(t *testing.T) {
	e := tap.NewEngine(tap.Config{}, correlationRules())
	e.Feed(onConn(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), "p1"))
	e.Feed(onConn(harnessFrame(convIntercept("e2", convEvent("e2", "tool.before", ""), denyCaps)), "p2"))
	// The harness closing stdin ends nothing: the backend may still answer.
	if fs := e.Note(tap.Note{Kind: tap.NoteEOF, Dir: tap.FromHarness, Conn: "p1"}); len(fs) != 0 {
		t.Errorf("harness EOF: findings %s, want none", dump(fs))
	}
	fs := e.Note(tap.Note{Kind: tap.NoteExit, Conn: "p1"})
	wantFindings(t, fs, "CORR-2", 1)
	fs = e.Note(tap.Note{Kind: tap.NoteUpstreamFailure, Conn: "p2"})
	if len(fs) != 1 || fs[0].Level != tap.Warn {
		t.Errorf("upstream failure: findings %s, want one warning", dump(fs))
	}
	// Both were reported once; Finish has nothing left to say.
	wantFindings(t, e.Finish(), "CORR-2", 0)
	xs := e.Conversation().Exchanges()
	if xs[0].Outcome != tap.OutcomeUnanswered || xs[1].Outcome != tap.OutcomeFailure {
		t.Errorf("outcomes = %q, %q, want %q, %q", xs[0].Outcome, xs[1].Outcome, tap.OutcomeUnanswered, tap.OutcomeFailure)
	}
}

// A harness that gives up on a request (closes its HTTP connection) is
// context, not a backend that never answered: info, never an error.
func TestAnsweredOnceHarnessGone(t *testing.T) {
	e := tap.NewEngine(tap.Config{}, correlationRules())
	e.Feed(onConn(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), "http/1"))
	e.Feed(onConn(harnessFrame(convIntercept("e2", convEvent("e2", "tool.before", ""), denyCaps)), "http/2"))
	fs := e.Note(tap.Note{Kind: tap.NoteHarnessGone, Conn: "http/1"})
	if len(fs) != 1 || fs[0].Level != tap.Info {
		t.Errorf("harness gone: findings %s, want one info", dump(fs))
	}
	// e2 on the other connection is still pending and is an error at the end.
	end := e.Finish()
	if len(end) != 1 || end[0].Level != tap.Error || end[0].EventID != "e2" {
		t.Errorf("Finish() = %s, want one error for e2", dump(end))
	}
	if x := e.Conversation().Exchanges()[0]; x.Outcome != tap.OutcomeAbandoned {
		t.Errorf("outcome = %q, want %q", x.Outcome, tap.OutcomeAbandoned)
	}
}

func TestLate(t *testing.T) {
	req := func() *tap.Frame {
		return atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), 0)
	}
	tests := []struct {
		name    string
		timeout time.Duration
		resAt   int
		want    int
		outcome string
	}{
		{"in time", 500 * time.Millisecond, 499, 0, tap.OutcomeNoEffect},
		{"on the deadline", 500 * time.Millisecond, 500, 0, tap.OutcomeNoEffect},
		{"late", 500 * time.Millisecond, 501, 1, tap.OutcomeLate},
		{"no deadline known", 0, 60000, 0, tap.OutcomeNoEffect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs, fs := exchangesOf(tap.Config{Timeout: tt.timeout}, correlationRules(), req(), atMs(backendFrame(convResult("e1", `[]`)), tt.resAt))
			wantFindings(t, fs, "CORR-3", tt.want)
			if got := xs[0].Outcome; got != tt.outcome {
				t.Errorf("Outcome = %q, want %q", got, tt.outcome)
			}
		})
	}
}

func TestLateOnlyForInterception(t *testing.T) {
	fs := runRules(tap.Config{Timeout: 100 * time.Millisecond}, correlationRules(),
		atMs(harnessFrame(`{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`), 0),
		atMs(backendFrame(`{"jsonrpc":"2.0","id":"d","result":{"protocolVersion":"draft","manifest":{}}}`), 5000))
	wantFindings(t, fs, "CORR-3", 0)
}

func TestLateUsesSubscriptionTimeout(t *testing.T) {
	reg, _, err := tap.ParseJSON([]byte(`{"protocolVersion":"draft","hooks":[{"id":"com.example.p","transport":{"type":"http","url":"https://p.example/h"},
		"subscriptions":[{"events":["tool.*"],"mode":"intercept","timeoutMs":100,"failurePolicy":"fail-open","content":{"default":"omit"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := tap.Config{Registration: reg, HookID: "com.example.p", Timeout: time.Hour}
	fs := runRules(cfg, correlationRules(),
		atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), 0),
		atMs(backendFrame(convResult("e1", `[]`)), 150))
	wantFindings(t, fs, "CORR-3", 1)
}

func TestOutcome(t *testing.T) {
	caps := `{"effects":["deny","message","flow"],"flow":{"operations":["stop"]}}`
	tests := []struct {
		name string
		res  string
		want string
	}{
		{"no effect", convResult("e1", `[]`), tap.OutcomeNoEffect},
		{"deny", convResult("e1", `[{"type":"message","text":"x"},{"type":"deny","reason":"r"}]`), tap.OutcomeDeny},
		{"effects", convResult("e1", `[{"type":"flow","operation":"stop","reason":"r"}]`), tap.OutcomeEffects},
		{"error", convError("e1", -32004), tap.OutcomeErrorAnswer},
		{"unknown effect takes down a deny", convResult("e1", `[{"type":"deny","reason":"r"},{"type":"grant"}]`), tap.OutcomeInvalid},
		{"unadvertised extension effect", convResult("e1", `[{"type":"com.example.q"}]`), tap.OutcomeInvalid},
		{"unadvertised effect", convResult("e1", `[{"type":"allow"}]`), tap.OutcomeInvalid},
		{"wrong version", `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"0.1","effects":[]}}`, tap.OutcomeInvalid},
		{"no effects list", `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`, tap.OutcomeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs, _ := exchangesOf(tap.Config{}, correlationRules(),
				harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), caps)), backendFrame(tt.res))
			if got := xs[0].Outcome; got != tt.want {
				t.Errorf("Outcome = %q, want %q", got, tt.want)
			}
		})
	}
}

// myChecks are the checks of the conversation-level rules.
var myChecks = []string{"BASE-2", "BASE-3", "BASE-4", "BASE-5", "BASE-6", "BASE-7", "BASE-8", "BASE-9", "CORR-1", "CORR-2", "CORR-3"}

// TestConformingConversation replays conforming fixture exchanges as one
// live conversation (not an excerpt) through the default rules: none of the
// conversation-level checks may report a warning or an error.
func TestConformingConversation(t *testing.T) {
	pairs := [][2]string{
		{"http/intercept-request.valid.json", "http/deny-response.valid.json"},
		{"stdio/intercept-request.valid.jsonl", "stdio/no-effect-response.valid.jsonl"},
	}
	reg, _, err := tap.ParseJSON([]byte(`{"protocolVersion":"draft","hooks":[{"id":"com.example.p","transport":{"type":"http","url":"https://p.example/h"},
		"subscriptions":[{"events":["tool.*"],"mode":"intercept","timeoutMs":500,"failurePolicy":"fail-open","content":{"default":"omit"}},
		{"events":["*"],"mode":"observe","content":{"default":"omit"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var frames []*tap.Frame
	ms := 0
	add := func(path string, dir tap.Direction) {
		data, err := os.ReadFile(filepath.Join(sharedAHP, "fixtures/draft", path))
		if err != nil {
			t.Skipf("no shared corpus: %v", err)
		}
		f := &tap.Frame{Dir: dir, Transport: tap.File, Raw: bytes.TrimSpace(data)}
		frames = append(frames, atMs(f, ms))
		ms += 10
	}
	for _, p := range pairs {
		add(p[0], tap.FromHarness)
		add(p[1], tap.FromBackend)
	}
	for _, p := range []string{"http/observe-tool-before.valid.json", "http/observe-session-start.valid.json", "http/profile-harness-present.valid.json", "http/capabilities-request.valid.json"} {
		add(p, tap.FromHarness)
	}
	frames = append(frames, atMs(backendFrame(`{"jsonrpc":"2.0","id":"discovery","result":{"protocolVersion":"draft","manifest":{}}}`), ms))
	fs := runRules(tap.Config{Registration: reg, HookID: "com.example.p"}, Default(Options{}), frames...)
	for _, f := range fs {
		if slices.Contains(myChecks, f.Check) && f.Level >= tap.Warn {
			t.Errorf("conforming conversation: %v", f)
		}
	}
}

// BenchmarkConversationRules feeds intercept exchanges (request, deny
// response) through the conversation-level rule families.
func BenchmarkConversationRules(b *testing.B) {
	var rs []tap.Rule
	for _, fam := range [][]tap.Rule{versionRules(), unknownRules(), extensionRules(), dispatchRules(), retryRules(), errorRules(), harnessRules(), authorityRules(), correlationRules()} {
		rs = append(rs, fam...)
	}
	e := tap.NewEngine(tap.Config{Timeout: time.Second}, rs)
	caps := `{"effects":["deny","message"]}`
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("evt_%d", i)
		req := atMs(harnessFrame(convIntercept(id, convEvent(id, "tool.before", `,"extensions":{"org.w3c.trace_context":{}}`), caps)), i)
		res := atMs(backendFrame(convResult(id, `[{"type":"deny","reason":"r","code":"com.example.p"}]`)), i+1)
		e.Feed(req)
		e.Feed(res)
	}
}

// CORR-2 (issue 12): an id that other implementations do not preserve is a
// warning on the request; pairing still compares ids exactly as written.
func TestPortableRequestIDs(t *testing.T) {
	req := func(id string) *tap.Frame {
		return harnessFrame(`{"jsonrpc":"2.0","id":` + id + `,"method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`)
	}
	answer := func(id string) *tap.Frame {
		return backendFrame(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"m"}}`)
	}
	tests := []struct {
		name         string
		sent, answer string
		warn, errors int
		warnMentions string
	}{
		{"largest safe integer", "9007199254740991", "9007199254740991", 0, 0, ""},
		{"smallest safe integer", "-9007199254740991", "-9007199254740991", 0, 0, ""},
		{"string id", `"9007199254740993"`, `"9007199254740993"`, 0, 0, ""},
		{"above 2^53-1, echoed exactly", "9007199254740993", "9007199254740993", 1, 0, "2^53-1"},
		{"below -(2^53-1)", "-9007199254740993", "-9007199254740993", 1, 0, "2^53-1"},
		{"beyond int64", "100000000000000000000", "100000000000000000000", 1, 0, "2^53-1"},
		// The answer JavaScript would send back: another id, never coerced
		// into a match (an unsolicited response, an unanswered request).
		{"above 2^53-1, rounded by the backend", "9007199254740993", "9007199254740992", 1, 2, "2^53-1"},
		{"written as 1.0, echoed exactly", "1.0", "1.0", 1, 0, "re-encode it as 1"},
		{"written as 1.0, answered as 1", "1.0", "1", 1, 2, "non-integer number"},
		{"written as 2e1", "2e1", "2e1", 1, 0, "re-encode it as 20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := withCheck(runRules(tap.Config{}, Default(Options{}), req(tt.sent), answer(tt.answer)), "CORR-2")
			var warns, errs []tap.Finding
			for _, f := range fs {
				switch f.Level {
				case tap.Warn:
					warns = append(warns, f)
				case tap.Error:
					errs = append(errs, f)
				}
			}
			if len(warns) != tt.warn || len(errs) != tt.errors {
				t.Fatalf("CORR-2 findings = %d warn, %d error, want %d, %d:%s", len(warns), len(errs), tt.warn, tt.errors, dump(fs))
			}
			if tt.warn > 0 && (warns[0].Pointer != "/id" || warns[0].Rule != "CORR-2/portable-id" || !bytes.Contains([]byte(warns[0].Message), []byte(tt.warnMentions))) {
				t.Errorf("warning = %s (rule %s), want CORR-2/portable-id at /id mentioning %q", warns[0], warns[0].Rule, tt.warnMentions)
			}
		})
	}
	// BASE-1 owns an id that is not an integer at all; an id beyond int64
	// is still an integer, so BASE-1 accepts it.
	fs := runRules(tap.Config{}, Default(Options{}), req("1.5"), answer("1.5"))
	wantFindings(t, withCheck(fs, "CORR-2"), "CORR-2", 0)
	if len(withCheck(fs, "BASE-1")) == 0 {
		t.Errorf("id 1.5: no BASE-1 finding:%s", dump(fs))
	}
	fs = runRules(tap.Config{}, Default(Options{}), req("100000000000000000000"), answer("100000000000000000000"))
	wantFindings(t, fs, "BASE-1", 0)
}

// A late answer is the backend's SHOULD broken: CORR-3 warn, naming the
// request's id and event (a response frame has no event of its own).
func TestLateNamesTheEventAndWhoBrokeWhat(t *testing.T) {
	fs := runRules(tap.Config{Timeout: 100 * time.Millisecond}, correlationRules(),
		atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), 0),
		atMs(backendFrame(convResult("e1", `[]`)), 250))
	late := withCheck(fs, "CORR-3")
	if len(late) != 1 {
		t.Fatalf("CORR-3 findings: %s", dump(fs))
	}
	f := late[0]
	if f.Level != tap.Warn || f.EventID != "e1" || f.RPCID != `"e1"` || f.Seq != 2 ||
		!strings.Contains(f.Message, "250ms") || !strings.Contains(f.Message, "backend SHOULD") || !strings.Contains(f.Message, "binds the harness") {
		t.Errorf("CORR-3 = %+v", f)
	}
}

// A request the harness gives up at its deadline (it closes the HTTP
// connection, or kills the stdio tap's process group) is the same CORR-3
// fact as a late answer, and no CORR-2; given up before its deadline it
// is the harness's choice: CORR-2 info, no CORR-3.
func TestLateAbandonedAtTheDeadline(t *testing.T) {
	for _, kind := range []tap.NoteKind{tap.NoteHarnessGone, tap.NoteKilled} {
		for _, tt := range []struct {
			at           int
			corr3, corr2 int
		}{{150, 1, 0}, {50, 0, 1}} {
			tr := tap.HTTP
			if kind == tap.NoteKilled {
				tr = tap.Stdio
			}
			e := tap.NewEngine(tap.Config{Timeout: 100 * time.Millisecond, Transport: tr}, correlationRules())
			e.Feed(onConn(atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), 0), "c1"))
			fs := e.Note(tap.Note{Kind: kind, Conn: "c1", Time: t0.Add(time.Duration(tt.at) * time.Millisecond)})
			fs = append(fs, e.Finish()...)
			c3, c2 := withCheck(fs, "CORR-3"), withCheck(fs, "CORR-2")
			if len(c3) != tt.corr3 || len(c2) != tt.corr2 {
				t.Errorf("%s at %dms: %s; want %d CORR-3 and %d CORR-2", kind, tt.at, dump(fs), tt.corr3, tt.corr2)
				continue
			}
			for _, f := range c3 {
				if f.Level != tap.Warn || f.EventID != "e1" || !strings.Contains(f.Message, "not answered within its 100ms deadline") {
					t.Errorf("%s: CORR-3 = %+v", kind, f)
				}
			}
			for _, f := range c2 {
				if f.Level != tap.Info {
					t.Errorf("%s before the deadline: CORR-2 level %s, want info", kind, f.Level)
				}
			}
		}
	}
	// Given up before its deadline, the request stays the harness's
	// choice when the deadline passes later (the live tap's clock, a
	// stream that goes on): the tap stopped waiting for the answer with
	// the harness (forward mode cancels the upstream request), so no
	// CORR-3 blames the backend for it. bench/http.sh's forward tap
	// logged CORR-2 info and, 5 s later, CORR-3 for wrk's last requests.
	for _, kind := range []tap.NoteKind{tap.NoteHarnessGone, tap.NoteKilled} {
		e := tap.NewEngine(tap.Config{Timeout: 100 * time.Millisecond, Transport: tap.HTTP}, correlationRules())
		e.Feed(onConn(atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), 0), "c1"))
		fs := e.Note(tap.Note{Kind: kind, Conn: "c1", Time: t0.Add(50 * time.Millisecond)})
		fs = append(fs, e.Note(tap.Note{Kind: tap.NoteDeadline, Time: t0.Add(200 * time.Millisecond)})...)
		fs = append(fs, e.Feed(onConn(atMs(harnessFrame(`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}`), 300), "c2"))...)
		fs = append(fs, e.Finish()...)
		if len(withCheck(fs, "CORR-3")) != 0 || len(withCheck(fs, "CORR-2")) != 1 {
			t.Errorf("%s at 50ms, then the deadline and the stream passing it: %s; want one CORR-2 (info), no CORR-3", kind, dump(fs))
		}
	}
	// A stream that ends past the deadline with the request unanswered:
	// CORR-3, not "never answered".
	fs := runRules(tap.Config{Timeout: 100 * time.Millisecond}, correlationRules(),
		atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), 0),
		atMs(harnessFrame(`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}`), 300))
	if len(withCheck(fs, "CORR-3")) != 1 || len(withCheck(fs, "CORR-2")) != 0 {
		t.Errorf("stream ended past the deadline: %s; want one CORR-3, no CORR-2", dump(fs))
	}
}

// An HTTP status without a JSON-RPC body (a wrong token's 401, a 403)
// answers the request at the HTTP layer: it is no longer pending, so no
// CORR-2 "never answered" at the end; another connection's request still is.
func TestHTTPStatusAnswersTheRequest(t *testing.T) {
	e := tap.NewEngine(tap.Config{Transport: tap.HTTP}, correlationRules())
	for i, conn := range []string{"h1", "h2", "h3"} {
		id := fmt.Sprintf("e%d", i+1)
		e.Feed(onConn(harnessFrame(convIntercept(id, convEvent(id, "tool.before", ""), denyCaps)), conn))
	}
	for _, n := range []tap.Note{
		{Kind: tap.NoteHTTPResponse, Conn: "h1", HTTP: &tap.HTTPMeta{Status: 401}},
		{Kind: tap.NoteHTTPResponse, Conn: "h2", HTTP: &tap.HTTPMeta{Status: 403}},
	} {
		if fs := e.Note(n); len(fs) != 0 {
			t.Errorf("HTTP %d: %s, want no correlation finding", n.HTTP.Status, dump(fs))
		}
	}
	end := withCheck(e.Finish(), "CORR-2")
	if len(end) != 1 || end[0].EventID != "e3" {
		t.Errorf("Finish CORR-2 = %s, want one, for e3 (no HTTP answer)", dump(end))
	}
	xs := e.Conversation().Exchanges()
	if xs[0].Outcome != tap.OutcomeFailure || xs[1].Outcome != tap.OutcomeFailure {
		t.Errorf("outcomes %q %q, want %q", xs[0].Outcome, xs[1].Outcome, tap.OutcomeFailure)
	}
}

// corr2Frames returns a request with JSON-RPC id id and its answer.
func corr2Exchange(id string) (*tap.Frame, *tap.Frame) {
	return harnessFrame(`{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{}}`),
		backendFrame(`{"jsonrpc":"2.0","id":"` + id + `","result":{}}`)
}

// TestAnsweredOnceStateBounded: CORR-2 keeps its per-id counts only for
// the ids the conversation still remembers, so a conversation of a
// million requests holds a bounded number of them (it used to keep two
// counts per id for ever: 19 MB after 170,000 requests of a replay).
func TestAnsweredOnceStateBounded(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	n := 1_000_000
	switch {
	case testing.Short() || raceEnabled && !e2e.Enabled:
		n = 25_000 // 50,000 per-id counts if unbounded, six times the bound
	case raceEnabled:
		n = 100_000 // still a hundred times the remembered window
	}
	rule := answeredOnceRule{info("CORR-2/answered-once", "CORR-2", "")}
	e := tap.NewEngine(tap.Config{}, []tap.Rule{rule})
	c := e.Conversation()
	most := 0
	for i := range n {
		req, res := corr2Exchange("r" + strconv.Itoa(i))
		if fs := e.Feed(req); len(fs) > 0 {
			t.Fatalf("request %d: %s", i, dump(fs))
		}
		if fs := e.Feed(res); len(fs) > 0 {
			t.Fatalf("answer %d: %s", i, dump(fs))
		}
		st := rule.state(c)
		most = max(most, len(st.sent)+len(st.answers)+len(st.reported))
	}
	// At most the remembered ids' two counts (2×KeepAnswered exchanges
	// before the conversation compacts) plus the ids seen since the last
	// sweep.
	if bound := 4*tap.DefaultKeepAnswered + minSweepLimit; most > bound {
		t.Errorf("CORR-2 held %d per-id counts over %d exchanges, want at most %d", most, n, bound)
	}
	if fs := e.Finish(); len(fs) > 0 {
		t.Errorf("findings at the end: %s", dump(fs))
	}
}

// TestAnsweredOnceAcrossForgetting: the counts of an id the conversation
// still remembers survive the sweeps that drop forgotten ones, so a
// duplicate answer inside the window is still caught and the second copy
// of a retried request may still be answered.
func TestAnsweredOnceAcrossForgetting(t *testing.T) {
	const keep = 8
	filler := func(from, n int) []*tap.Frame {
		var out []*tap.Frame
		for i := from; i < from+n; i++ {
			req, res := corr2Exchange("f" + strconv.Itoa(i))
			out = append(out, req, res)
		}
		return out
	}
	req, res := corr2Exchange("A")
	tests := []struct {
		name   string
		frames []*tap.Frame
		want   string // "" for no CORR-2 finding
	}{
		// 12 exchanges, then A: the 4 after A make the conversation forget
		// the oldest (order reaches 2×keep), while A stays remembered.
		{"duplicate answer inside the window", slices.Concat(filler(0, 12), []*tap.Frame{req, res}, filler(12, 4), []*tap.Frame{res}),
			"answers a request that was already answered"},
		{"retry: second copy answered after a sweep", slices.Concat(filler(0, 12), []*tap.Frame{req, req, res}, filler(12, 4), []*tap.Frame{res}),
			""},
		{"retry: a third answer after a sweep", slices.Concat(filler(0, 12), []*tap.Frame{req, req, res}, filler(12, 4), []*tap.Frame{res, res}),
			"answers a request that was already answered"},
		{"duplicate answer after the window", slices.Concat([]*tap.Frame{req, res}, filler(0, 40), []*tap.Frame{res}),
			"matches no request that was sent"},
		{"id reused after the window", slices.Concat([]*tap.Frame{req, res}, filler(0, 40), []*tap.Frame{req, res}),
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fresh []*tap.Frame
			for _, f := range tt.frames {
				fresh = append(fresh, &tap.Frame{Dir: f.Dir, Transport: f.Transport, Raw: f.Raw})
			}
			e := tap.NewEngine(tap.Config{KeepAnswered: keep}, correlationRules())
			var fs []tap.Finding
			for _, f := range fresh {
				fs = append(fs, e.Feed(f)...)
			}
			fs = withCheck(append(fs, e.Finish()...), "CORR-2")
			if e.Conversation().Forgotten() == 0 {
				t.Fatal("the conversation forgot nothing: the test does not cross a sweep")
			}
			switch {
			case tt.want == "" && len(fs) > 0:
				t.Errorf("want no CORR-2 finding, got%s", dump(fs))
			case tt.want != "" && (len(fs) != 1 || !strings.Contains(fs[0].Message, tt.want)):
				t.Errorf("want one CORR-2 finding saying %q, got%s", tt.want, dump(fs))
			}
		})
	}
}

// TestLateStateBounded: CORR-3 reports each late answer and keeps nothing
// of the exchange it ends (it used to keep every late exchange for the
// whole conversation).
func TestLateStateBounded(t *testing.T) {
	if norace.Run(t) {
		return
	}
	rule := lateRule{warnInfo("CORR-3/late", "CORR-3", "")}
	e := tap.NewEngine(tap.Config{Timeout: 500 * time.Millisecond}, []tap.Rule{rule})
	const n = 5000
	late := 0
	for i := range n {
		id := "e" + strconv.Itoa(i)
		e.Feed(atMs(harnessFrame(convIntercept(id, convEvent(id, "tool.before", ""), denyCaps)), 1000*i))
		late += len(withCheck(e.Feed(atMs(backendFrame(convResult(id, `[]`)), 1000*i+600)), "CORR-3"))
	}
	if late != n {
		t.Errorf("%d late answers reported, want %d", late, n)
	}
	if k := len(rule.state(e.Conversation()).reported); k != 0 {
		t.Errorf("CORR-3 keeps %d answered exchanges", k)
	}
}

// TestInjectedCrashIsNobodysFault: a backend the tap killed on purpose
// (--inject crash) is not charged with the request it was killed for; the
// other pending request on the link still is.
func TestInjectedCrashIsNobodysFault(t *testing.T) {
	e := tap.NewEngine(tap.Config{}, correlationRules())
	e.Feed(onConn(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)), "p1"))
	e.Feed(onConn(harnessFrame(convIntercept("e2", convEvent("e2", "tool.before", ""), denyCaps)), "p1"))
	if fs := e.Note(tap.Note{Kind: tap.NoteInjected, Conn: "p1", Fault: "crash", ID: `"e1"`}); len(fs) != 0 {
		t.Errorf("injected note: findings %s", dump(fs))
	}
	fs := e.Note(tap.Note{Kind: tap.NoteExit, Conn: "p1"})
	if len(fs) != 1 || !strings.Contains(fs[0].Message, `"e2"`) {
		t.Errorf("exit after an injected crash: findings %s, want CORR-2 for e2 only", dump(fs))
	}
	if x := e.Conversation().Exchanges()[0]; x.Outcome != tap.OutcomeInjected {
		t.Errorf("outcome %q, want %q", x.Outcome, tap.OutcomeInjected)
	}
}

// TestAnsweredOnceSweepsOnlyWhenIDsAreForgotten: a backend that answers
// ids nobody sent, with effects (each answer becomes a standalone
// exchange the conversation keeps at most KeepAnswered of), made the
// conversation forget one exchange per frame, and CORR-2 swept its
// per-id counts (thousands of entries) on every one of those frames:
// the audit of such a link slowed to about 400 µs per exchange. Forgetting
// standalone answers changes no id the conversation remembers, so it no
// longer triggers a sweep; the answers are still reported.
func TestAnsweredOnceSweepsOnlyWhenIDsAreForgotten(t *testing.T) {
	rule := answeredOnceRule{info("CORR-2/answered-once", "CORR-2", "")}
	e := tap.NewEngine(tap.Config{}, append(Default(Options{}), rule))
	c := e.Conversation()
	for i := range 3 * tap.DefaultKeepAnswered {
		req, res := corr2Exchange("r" + strconv.Itoa(i))
		e.Feed(req)
		e.Feed(res)
	}
	before := rule.state(c).sweeps
	const stray = 4 * tap.DefaultKeepAnswered
	unsolicited := 0
	for i := range stray {
		f := backendFrame(`{"jsonrpc":"2.0","id":"stray-` + strconv.Itoa(i) + `","result":{"effects":[]}}`)
		for _, fd := range e.Feed(f) {
			if fd.Check == "CORR-2" && strings.Contains(fd.Message, "matches no request") {
				unsolicited++
			}
		}
	}
	if c.Forgotten() < stray-tap.DefaultKeepAnswered {
		t.Fatalf("the conversation forgot %d exchanges: the stray answers did not become standalone ones", c.Forgotten())
	}
	if unsolicited == 0 {
		t.Fatal("no CORR-2 for answers to ids never sent")
	}
	if n := rule.state(c).sweeps - before; n > 4 {
		t.Errorf("CORR-2 swept its per-id counts %d times during %d stray answers, want a few at most", n, stray)
	}
}
