package inject

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseSpecs(t *testing.T) {
	good := map[string]Fault{
		"drop,event=tool.before":                  {Kind: Drop, Event: "tool.before"},
		"delay=2s,method=hooks/intercept,every=3": {Kind: Delay, Delay: 2 * time.Second, Method: "hooks/intercept", Every: 3},
		"error=-32000":                            {Kind: Error, Code: -32000},
		"error":                                   {Kind: Error, Code: DefaultErrorCode},
		"status=503,retry-after=1":                {Kind: Status, Status: 503, RetryAfter: "1"},
		"malformed,id=evt_1":                      {Kind: Malformed, ID: "evt_1"},
		"invalid-deny,hook=com.example.a,p=0.3":   {Kind: InvalidDeny, Hook: "com.example.a", P: 0.3},
		"unadvertised-effect":                     {Kind: Unadvertised},
		"close":                                   {Kind: Close},
		"banner":                                  {Kind: Banner},
		"partial":                                 {Kind: Partial},
		"crash,event=tool.after,method=hooks/intercept": {Kind: Crash, Event: "tool.after", Method: "hooks/intercept"},
	}
	for spec, want := range good {
		got, err := Parse(spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
			continue
		}
		want.Spec = spec
		if got != want {
			t.Errorf("Parse(%q) = %+v, want %+v", spec, got, want)
		}
	}
	bad := map[string]string{
		"":                       "empty",
		"explode":                "unknown fault",
		"delay":                  "delay=D needs a duration",
		"delay=-1s":              "delay=D needs a duration",
		"delay=2h":               "at most 1h0m0s",
		"error=abc":              "integer JSON-RPC error code",
		"status=200":             "400 to 599",
		"drop=1":                 "takes no value",
		"drop,event=tool_before": "not an AHP event type",
		"drop,method=tools/call": "not an AHP request method",
		"drop,every=0":           "every=N",
		"drop,p=1.5":             "p=P",
		"drop,p=0":               "p=P",
		"drop,colour=red":        "unknown selector",
		"drop,event=":            "needs a value",
		"drop,close":             "one fault per spec",
		"drop,event=tool.before,event=tool.after": "given twice",
		"drop,retry-after=3":                      "retry-after goes with status",
		"drop,,event=tool.before":                 "empty item",
	}
	for spec, want := range bad {
		_, err := Parse(spec)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want an error with %q", spec, want)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "--inject ") {
			t.Errorf("Parse(%q) = %q, want one line starting --inject and containing %q", spec, msg, want)
		}
	}
}

func TestCheckTransport(t *testing.T) {
	for spec, wantErr := range map[string][2]bool{ // {stdio fails, http fails}
		"crash": {false, true}, "banner": {false, true}, "partial": {false, true},
		"status=503": {true, false}, "drop": {false, false}, "close": {false, false},
	} {
		f, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Check(Stdio) != nil; got != wantErr[0] {
			t.Errorf("%s on stdio: error %v, want %v", spec, got, wantErr[0])
		}
		if got := f.Check(HTTP) != nil; got != wantErr[1] {
			t.Errorf("%s on http: error %v, want %v", spec, got, wantErr[1])
		}
	}
}

func intercept(id, eventType string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id + `","type":"` + eventType + `"},"capabilities":{"effects":["deny"]}}}`)
}

func mustDecode(t *testing.T, msg []byte) Request {
	t.Helper()
	r, ok := Decode(msg)
	if !ok {
		t.Fatalf("Decode(%s) is not a request", msg)
	}
	return r
}

func TestDecode(t *testing.T) {
	r := mustDecode(t, intercept("evt_1", "tool.before"))
	if r.Method != "hooks/intercept" || string(r.ID) != `"evt_1"` || r.EventType != "tool.before" || r.EventID != "evt_1" ||
		r.ProtocolVersion != "draft" || len(r.Advertised) != 1 || r.Advertised[0] != "deny" {
		t.Errorf("Decode = %+v", r)
	}
	for _, notRequest := range []string{
		`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}`, // a notification
		`{"jsonrpc":"2.0","id":"x","result":{}}`,                 // a response
		`{"jsonrpc":"2.0","id":null,"method":"hooks/intercept"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"hooks/intercept"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"hooks/intercept"}]`,
		`not json`,
	} {
		if r, ok := Decode([]byte(notRequest)); ok {
			t.Errorf("Decode(%s) = %+v, want not a request", notRequest, r)
		}
	}
	if r := mustDecode(t, []byte(`{"jsonrpc":"2.0","id":7,"method":"hooks/capabilities"}`)); r.idText() != "7" {
		t.Errorf("numeric id text %q", r.idText())
	}
}

func TestDecideSelectors(t *testing.T) {
	parse := func(spec string) Fault {
		f, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	before, after := mustDecode(t, intercept("evt_1", "tool.before")), mustDecode(t, intercept("evt_2", "tool.after"))
	caps := mustDecode(t, []byte(`{"jsonrpc":"2.0","id":"discovery","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`))

	p := NewPlan([]Fault{parse("drop,event=tool.before")}, "", 1)
	if _, ok := p.Decide(after); ok {
		t.Error("event=tool.before selected a tool.after")
	}
	if _, ok := p.Decide(caps); ok {
		t.Error("event=tool.before selected hooks/capabilities")
	}
	if f, ok := p.Decide(before); !ok || f.Kind != Drop {
		t.Errorf("event=tool.before did not select a tool.before: %+v %v", f, ok)
	}

	p = NewPlan([]Fault{parse("error,method=hooks/capabilities")}, "", 1)
	if _, ok := p.Decide(before); ok {
		t.Error("method=hooks/capabilities selected an intercept")
	}
	if _, ok := p.Decide(caps); !ok {
		t.Error("method=hooks/capabilities did not select discovery")
	}

	p = NewPlan([]Fault{parse("drop,hook=com.example.a")}, "com.example.b", 1)
	if _, ok := p.Decide(before); ok {
		t.Error("hook=com.example.a selected on the tap of com.example.b")
	}
	p = NewPlan([]Fault{parse("drop,hook=com.example.a")}, "com.example.a", 1)
	if _, ok := p.Decide(before); !ok {
		t.Error("hook=com.example.a did not select on its own tap")
	}

	p = NewPlan([]Fault{parse("drop,id=evt_2")}, "", 1)
	if _, ok := p.Decide(before); ok {
		t.Error("id=evt_2 selected evt_1")
	}
	if _, ok := p.Decide(after); !ok {
		t.Error("id=evt_2 did not select evt_2")
	}

	p = NewPlan([]Fault{parse("delay=1s,event=tool.before,every=3")}, "", 1)
	var hits []int
	for i := 1; i <= 9; i++ {
		p.Decide(after) // not counted: the event selector does not match
		if _, ok := p.Decide(before); ok {
			hits = append(hits, i)
		}
	}
	if len(hits) != 3 || hits[0] != 3 || hits[1] != 6 || hits[2] != 9 || p.Injected() != 3 {
		t.Errorf("every=3 hit %v (injected %d), want [3 6 9]", hits, p.Injected())
	}

	// The first matching fault wins.
	p = NewPlan([]Fault{parse("error=-32000,event=tool.after"), parse("drop")}, "", 1)
	if f, _ := p.Decide(after); f.Kind != Error {
		t.Errorf("first fault not chosen: %s", f.Kind)
	}
	if f, _ := p.Decide(before); f.Kind != Drop {
		t.Errorf("second fault not chosen: %s", f.Kind)
	}
}

// TestSeedReproducible: the same seed gives the same decisions, another
// seed others, and p= selects about its share.
func TestSeedReproducible(t *testing.T) {
	f, err := Parse("drop,p=0.3")
	if err != nil {
		t.Fatal(err)
	}
	run := func(seed uint64) string {
		p := NewPlan([]Fault{f}, "", seed)
		var b strings.Builder
		for i := range 200 {
			_, ok := p.Decide(mustDecode(t, intercept("evt_"+string(rune('a'+i%26)), "tool.before")))
			if ok {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b, c := run(42), run(42), run(43)
	if a != b {
		t.Errorf("seed 42 gave two different plans:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("seeds 42 and 43 gave the same plan %s", a)
	}
	if n := strings.Count(a, "x"); n < 30 || n > 90 {
		t.Errorf("p=0.3 selected %d of 200", n)
	}
	if !NewPlan([]Fault{f}, "", 42).Probabilistic() || !strings.Contains(NewPlan([]Fault{f}, "", 42).Banner(), "--seed 42") {
		t.Error("the banner of a probabilistic plan does not give its seed")
	}
}

func TestAnswers(t *testing.T) {
	r := mustDecode(t, intercept("evt_1", "tool.before"))
	answer := func(spec string) []byte {
		f, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		return Answer(f, r)
	}
	var e struct {
		ID    string `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(answer("error=-32000"), &e); err != nil || e.ID != "evt_1" || e.Error.Code != -32000 {
		t.Errorf("error answer %s: %v %+v", answer("error=-32000"), err, e)
	}
	if json.Valid(answer("malformed")) {
		t.Errorf("malformed answer is valid JSON: %s", answer("malformed"))
	}
	if p := answer("partial"); json.Valid(p) || !strings.HasPrefix(string(p), `{"`) || strings.Contains(string(p), "\n") {
		t.Errorf("partial answer %s", answer("partial"))
	}
	var res struct {
		ID     string `json:"id"`
		Result struct {
			ProtocolVersion string           `json:"protocolVersion"`
			Effects         []map[string]any `json:"effects"`
		} `json:"result"`
	}
	if err := json.Unmarshal(answer("invalid-deny"), &res); err != nil || res.Result.ProtocolVersion != "draft" ||
		len(res.Result.Effects) != 2 || res.Result.Effects[0]["type"] != "deny" || res.Result.Effects[1]["type"] != float64(42) {
		t.Errorf("invalid-deny answer %s", answer("invalid-deny"))
	}
	if err := json.Unmarshal(answer("unadvertised-effect"), &res); err != nil || len(res.Result.Effects) != 1 || res.Result.Effects[0]["type"] == "deny" {
		t.Errorf("unadvertised-effect answer %s", answer("unadvertised-effect"))
	}
	for _, spec := range []string{"drop", "delay=1s", "close", "banner", "crash", "status=503"} {
		if a := answer(spec); a != nil {
			t.Errorf("%s has an answer body %s", spec, a)
		}
	}
}

// TestAnswersCarryNoCredential: whatever the request holds besides its id
// and protocolVersion never reaches a synthesized answer or a note.
func TestAnswersCarryNoCredential(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	msg := []byte(`{"jsonrpc":"2.0","id":"evt_9","method":"hooks/intercept","params":{"protocolVersion":"draft",` +
		`"event":{"id":"evt_9","type":"tool.before","tool":{"input":{"command":"curl -H 'Authorization: Bearer ` + secret + `'"}}},` +
		`"capabilities":{"effects":["deny"]},"authorization":"Bearer ` + secret + `"}}`)
	r := mustDecode(t, msg)
	for _, k := range kinds {
		f := Fault{Kind: k, Code: -1, Status: 503, Delay: time.Second, Spec: string(k)}
		if a := Answer(f, r); strings.Contains(string(a), secret) {
			t.Errorf("%s answer carries the secret: %s", k, a)
		}
		if d := Describe(f, r); strings.Contains(d, secret) || !strings.Contains(d, Notice) {
			t.Errorf("%s note %q carries the secret or lacks the notice", k, d)
		}
	}
	// The one request field echoed is bounded and only a string.
	long := mustDecode(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","params":{"protocolVersion":"`+strings.Repeat("v", 65)+`"}}`))
	if long.ProtocolVersion != "" {
		t.Errorf("a 65-byte protocolVersion is echoed")
	}
}

func TestIDKeys(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`"evt_1"`, `"evt_1"`, true},
		{`"a"`, `"\u0061"`, true},
		{`1`, `1`, true},
		{`1`, `1.0`, false},
		{`1`, `"1"`, false},
		{`null`, `null`, false},
	} {
		ka, kb := IDKey(json.RawMessage(c.a)), IDKey(json.RawMessage(c.b))
		if got := ka != "" && ka == kb; got != c.same {
			t.Errorf("IDKey(%s) == IDKey(%s): %v, want %v", c.a, c.b, got, c.same)
		}
	}
	if ResponseID([]byte(`{"jsonrpc":"2.0","id":"x","method":"hooks/intercept"}`)) != "" || ResponseID([]byte(`{"jsonrpc":"2.0","id":"x","result":{}}`)) != "s:x" {
		t.Error("ResponseID takes a request for a response or misses a response")
	}
}

// A plan file names each fault; a bad one is refused with one line.
func TestParsePlan(t *testing.T) {
	faults, err := ParsePlan([]byte(`{"scenarios":[{"name":"drop-first","inject":"drop,id=evt_1"},{"name":"errors","inject":"error=-32000,event=tool.before,every=2"}]}`), Stdio)
	if err != nil {
		t.Fatal(err)
	}
	if len(faults) != 2 || faults[0].Scenario != "drop-first" || faults[0].Kind != Drop || faults[0].ID != "evt_1" ||
		faults[1].Scenario != "errors" || faults[1].Code != -32000 || faults[1].Every != 2 {
		t.Errorf("faults = %+v", faults)
	}
	if b := NewPlan(faults, "", 1).Banner(); !strings.Contains(b, "drop-first: drop,id=evt_1; errors: error=-32000") {
		t.Errorf("banner %q does not name the scenarios", b)
	}
	for plan, want := range map[string]string{
		`not json`:         "not a plan",
		`{"scenarios":[]}`: "no scenarios",
		`{"scenario":[{"name":"a","inject":"drop"}]}`:                                "not a plan",
		`{"scenarios":[{"name":"a"}]}`:                                               `needs a "name" and an "inject"`,
		`{"scenarios":[{"name":"a b","inject":"drop"}]}`:                             "printable ASCII",
		`{"scenarios":[{"name":"a","inject":"drop"},{"name":"a","inject":"error"}]}`: "given twice",
		`{"scenarios":[{"name":"a","inject":"explode"}]}`:                            `scenario "a": --inject "explode": unknown fault`,
		`{"scenarios":[{"name":"a","inject":"status=503"}]}`:                         "is an HTTP fault",
		`{"scenarios":[{"name":"a","inject":"drop"}]} {}`:                            "more than one JSON value",
	} {
		_, err := ParsePlan([]byte(plan), Stdio)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParsePlan(%s) = %v, want one line with %q", plan, err, want)
		}
	}
	if _, err := ParsePlan([]byte(`{"scenarios":[{"name":"a","inject":"status=503,retry-after=1"}]}`), HTTP); err != nil {
		t.Errorf("an HTTP plan on HTTP: %v", err)
	}
}
