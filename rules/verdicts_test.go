package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Issue 22: the verdict classes where ahp-tap disagreed with the upstream
// checker. Every class has a violating message (one error finding, under
// the named check, at the named pointer) and its conforming neighbour (no
// finding at warn or above, of any check).

// vEvent is a valid tool.before event; vIntercept wraps it in a request
// whose params end with more (",\"state\":…").
const vEvent = `{"id":"e1","source":"https://harness.example/runtime/42","type":"tool.before","time":"2026-08-24T08:51:14Z",` +
	`"harness":{"name":"h","version":"1"},"session":{"id":"s"},"tool":{"name":"Bash","input":{},"origin":"native"},"call":{"id":"c1"},"path":"native"}`

func vIntercept(more string) string {
	return `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":` + vEvent +
		`,"capabilities":{"effects":["deny"]}` + more + `}}`
}

// vEventWith is vIntercept with one event member replaced.
func vEventWith(old, new string) string {
	if !strings.Contains(vEvent, old) {
		panic("no " + old)
	}
	return strings.Replace(vIntercept(""), old, new, 1)
}

func vResult(more string) string {
	return `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]` + more + `}}`
}

// checkOne checks one standalone message with every rule.
func checkOne(js string) []tap.Finding {
	return CheckDocument("message.json", []byte(js), tap.Config{}, Options{})
}

type verdictCase struct {
	name  string
	js    string
	check string // "" for a conforming message
	ptr   string
}

func runVerdictCases(t *testing.T, cases []verdictCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := checkOne(c.js)
			var loud []tap.Finding
			for _, f := range fs {
				if f.Level >= tap.Warn {
					loud = append(loud, f)
				}
			}
			if c.check == "" {
				if len(loud) > 0 {
					t.Errorf("conforming %s: findings%s", c.js, dump(loud))
				}
				return
			}
			for _, f := range loud {
				if f.Check == c.check && f.Pointer == c.ptr && f.Level == tap.Error {
					return
				}
			}
			t.Errorf("violating %s: no %s error at %s; findings%s", c.js, c.check, c.ptr, dump(fs))
		})
	}
}

// params.state of hooks/intercept is validated as the schema defines it,
// under EVT-1, with the pointer.
func TestVerdictInterceptState(t *testing.T) {
	runVerdictCases(t, []verdictCase{
		{"no state", vIntercept(""), "", ""},
		{"null candidate", vIntercept(`,"state":{"permission":"none","candidate":null}`), "", ""},
		{"full state", vIntercept(`,"state":{"permission":"ask","candidate":{"value":{"command":"ls"},"provenance":{"by":"x"}},"flow":"continue","instructions":["be brief"],"injections":[{"any":1},2],"x-unknown":true}`), "", ""},
		{"state a string", vIntercept(`,"state":"allow"`), "EVT-1", "/params/state"},
		{"permission missing", vIntercept(`,"state":{"candidate":null}`), "EVT-1", "/params/state/permission"},
		{"candidate missing", vIntercept(`,"state":{"permission":"none"}`), "EVT-1", "/params/state/candidate"},
		{"unknown permission", vIntercept(`,"state":{"permission":"grant","candidate":null}`), "EVT-1", "/params/state/permission"},
		{"candidate without value", vIntercept(`,"state":{"permission":"none","candidate":{"provenance":{}}}`), "EVT-1", "/params/state/candidate/value"},
		{"candidate a string", vIntercept(`,"state":{"permission":"none","candidate":"x"}`), "EVT-1", "/params/state/candidate"},
		{"bad provenance", vIntercept(`,"state":{"permission":"none","candidate":{"value":1,"provenance":"hook"}}`), "EVT-1", "/params/state/candidate/provenance"},
		{"empty instruction", vIntercept(`,"state":{"permission":"none","candidate":null,"instructions":["ok",""]}`), "EVT-1", "/params/state/instructions/1"},
		{"bad flow", vIntercept(`,"state":{"permission":"none","candidate":null,"flow":"halt"}`), "EVT-1", "/params/state/flow"},
		{"injections an object", vIntercept(`,"state":{"permission":"none","candidate":null,"injections":{}}`), "EVT-1", "/params/state/injections"},
	})
}

// extensions that is not an object: EVT-1 in intercept params, EFF-1 in an
// intercept result.
func TestVerdictExtensionsNotObject(t *testing.T) {
	runVerdictCases(t, []verdictCase{
		{"params extensions object", vIntercept(`,"extensions":{"com.example.x":1}`), "", ""},
		{"params extensions array", vIntercept(`,"extensions":[1]`), "EVT-1", "/params/extensions"},
		{"params extensions string", vIntercept(`,"extensions":"com.example"`), "EVT-1", "/params/extensions"},
		{"result extensions object", vResult(`,"extensions":{"com.example.x":true}`), "", ""},
		{"result extensions null", vResult(`,"extensions":null`), "EFF-1", "/result/extensions"},
		{"result extensions number", vResult(`,"extensions":7`), "EFF-1", "/result/extensions"},
	})
}

// A response that also carries "method" is a response: no false BASE-1.
func TestVerdictResponseWithMethod(t *testing.T) {
	runVerdictCases(t, []verdictCase{
		{"result with method", `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","result":{"protocolVersion":"draft","effects":[]}}`, "", ""},
		{"error with method", `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","error":{"code":-32601,"message":"no"}}`, "", ""},
		// Still a fault: a method, params and a result is no one kind.
		{"request with result", strings.Replace(vIntercept(""), `"method"`, `"result":{},"method"`, 1), "BASE-1", "/result"},
		// The response's own faults are still found.
		{"result not object with method", `{"jsonrpc":"2.0","id":"e1","method":"x","result":[]}`, "BASE-1", "/result"},
	})
}

// Integers beyond 64 bits are integers; ranges compare their value.
func TestVerdictBigIntegers(t *testing.T) {
	manifest := func(limit string) string {
		return `{"jsonrpc":"2.0","id":"c1","result":{"protocolVersion":"draft","manifest":` +
			strings.Replace(tManifest, `"limits":{}`, `"limits":{"maxUploadBytes":`+limit+`}`, 1) + `}}`
	}
	attempt := func(n string) string {
		return `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":` +
			eventJS("model.error", strings.Replace(minimalPayloads["model.error"], `"number":2`, `"number":`+n, 1)) + `}}`
	}
	errResp := func(code string) string {
		return `{"jsonrpc":"2.0","id":"e1","error":{"code":` + code + `,"message":"m"}}`
	}
	runVerdictCases(t, []verdictCase{
		{"limit 2^64", manifest("18446744073709551616"), "", ""},
		{"limit 1e308", manifest("1e308"), "", ""},
		{"limit 1e400", manifest("1e400"), "", ""},
		{"limit -2^64", manifest("-18446744073709551616"), "CAP-2", "/result/manifest/limits/maxUploadBytes"},
		{"limit 1.5", manifest("1.5"), "CAP-2", "/result/manifest/limits/maxUploadBytes"},
		{"attempt 2^64", attempt("18446744073709551616"), "", ""},
		{"attempt 1e308", attempt("1e308"), "", ""},
		{"attempt 0", attempt("0"), "EVT-1", "/params/event/attempt/number"},
		{"attempt -1e308", attempt("-1e308"), "EVT-1", "/params/event/attempt/number"},
		{"attempt 0.5", attempt("0.5"), "EVT-1", "/params/event/attempt/number"},
		{"error code 2^64", errResp("18446744073709551616"), "", ""},
		{"error code 1e308", errResp("1e308"), "", ""},
		{"error code 1.5", errResp("1.5"), "BASE-1", "/error/code"},
	})
}

// timeoutMs and the other registration integers: of any size, compared
// exactly.
func TestVerdictBigIntegersRegistration(t *testing.T) {
	for _, c := range []struct {
		timeout string
		want    int
	}{
		{"750", 0},
		{"18446744073709551616", 0},
		{"1e308", 0},
		{"750.0", 0},
		{"0", 1},
		{"-18446744073709551616", 1},
		{"0.5", 1},
		{`"750"`, 1},
	} {
		doc := strings.Replace(validRegistration, `"timeoutMs":750`, `"timeoutMs":`+c.timeout, 1)
		fs := RegistrationFindings(mustParse(t, doc))
		if len(fs) != c.want || c.want == 1 && fs[0].Pointer != "/hooks/0/subscriptions/0/timeoutMs" {
			t.Errorf("timeoutMs %s: findings%s, want %d at /hooks/0/subscriptions/0/timeoutMs", c.timeout, dump(fs), c.want)
		}
	}
	// A deadline of 2^64 ms is a deadline: the session has one (no "not
	// checked" CORR-3), and nothing is late.
	reg := mustParse(t, strings.Replace(validRegistration, `"timeoutMs":750`, `"timeoutMs":18446744073709551616`, 1))
	s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.File, Registration: reg, HookID: "com.example.policy"},
		Rules: Set(Options{}), Sink: tap.SinkFunc(func(tap.Finding) {})})
	for _, n := range s.NotChecked() {
		if n.Check == "CORR-3" {
			t.Errorf("NotChecked = %v: a 2^64 ms timeoutMs is a deadline", s.NotChecked())
		}
	}
}

// source is an absolute URI by RFC 3986's grammar.
func TestVerdictSourceURI(t *testing.T) {
	src := `"source":"https://harness.example/runtime/42"`
	with := func(uri string) string { return vEventWith(src, `"source":`+fmt.Sprintf("%q", uri)) }
	runVerdictCases(t, []verdictCase{
		{"IPv6 literal", with("https://[2001:db8::1]:8443/runtime"), "", ""},
		{"IPv4-mapped IPv6", with("http://[::ffff:192.0.2.1]/x"), "", ""},
		{"IPvFuture", with("http://[v1.fe80::a+en1]/x"), "", ""},
		{"fragment with ? and /", with("urn:example:a?b#c/d?e"), "", ""},
		{"userinfo and port", with("ssh://user:pw@host.example:22/path"), "", ""},
		{"invalid IPv6 literal", with("https://[2001:db8::zz]/runtime"), "EVT-1", "/params/event/source"},
		{"IPv6 with zone", with("https://[fe80::1%25en0]/"), "EVT-1", "/params/event/source"},
		{"IPv4 in brackets", with("https://[192.0.2.1]/"), "EVT-1", "/params/event/source"},
		{"unclosed bracket", with("https://[::1/runtime"), "EVT-1", "/params/event/source"},
		{"# inside the fragment", with("https://harness.example/a#b#c"), "EVT-1", "/params/event/source"},
		{"bracket in path", with("https://harness.example/a[1]"), "EVT-1", "/params/event/source"},
		{"non-digit port", with("https://harness.example:80a/"), "EVT-1", "/params/event/source"},
	})
	for s, want := range map[string]bool{
		"a:":                   true,
		"a://":                 true,
		"a://h:":               true,
		"a://[::1]:":           true,
		"a://[::1]x":           false,
		"a://u@v@h/":           false,
		"a://h/p?q#f":          true,
		"urn:isbn:0451450523":  true,
		"a://[::1]/p%2":        false,
		"a://[v.x]/":           false,
		"a://[1:2:3:4:5:6:7]/": false,
	} {
		if got := isAbsoluteURI(s); got != want {
			t.Errorf("isAbsoluteURI(%q) = %v, want %v", s, got, want)
		}
	}
}

// RFC 3339 leap seconds: 23:59:60 UTC on the last day of a month only
// (the rule ahp-tap follows, as the upstream checker: any month end).
func TestVerdictLeapSecond(t *testing.T) {
	tm := `"time":"2026-08-24T08:51:14Z"`
	with := func(s string) string { return vEventWith(tm, `"time":"`+s+`"`) }
	runVerdictCases(t, []verdictCase{
		{"June 30", with("2015-06-30T23:59:60Z"), "", ""},
		{"December 31", with("2016-12-31T23:59:60Z"), "", ""},
		{"March 31 (any month end)", with("2026-03-31T23:59:60Z"), "", ""},
		{"February 28", with("2027-02-28T23:59:60Z"), "", ""},
		{"local time before midnight", with("2016-12-31T15:59:60-08:00"), "", ""},
		{"local time after midnight", with("2017-01-01T00:59:60+01:00"), "", ""},
		{"mid-month", with("2026-08-24T23:59:60Z"), "EVT-1", "/params/event/time"},
		{"February 28 in a leap year", with("2028-02-28T23:59:60Z"), "EVT-1", "/params/event/time"},
		{"local date is a month end, UTC is not", with("2016-12-31T23:59:60+01:00"), "EVT-1", "/params/event/time"},
		{"not 23:59 UTC", with("2016-12-31T22:59:60Z"), "EVT-1", "/params/event/time"},
	})
}

// An attachment mediaType follows the media type grammar.
func TestVerdictAttachmentMediaType(t *testing.T) {
	att := func(mt string) string {
		return `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":` +
			eventJS("turn.start", `"turn":{"id":"t"},"trigger":"user","items":[{"id":"m1","role":"user","parts":[`+
				`{"id":"a1","kind":"attachment","mediaType":`+fmt.Sprintf("%q", mt)+`,"selection":"body","body":{"ref":"r1"}}]}]`) + `}}`
	}
	ptr := "/params/event/items/0/parts/0/mediaType"
	runVerdictCases(t, []verdictCase{
		{"image/png", att("image/png"), "", ""},
		{"with parameters", att(`image/svg+xml; charset="utf-8";q=1`), "", ""},
		{"vendor type", att("application/vnd.ms-excel"), "", ""},
		{"trailing newline", att("image/png\n"), "EDIT-2", ptr},
		{"trailing space", att("image/png "), "EDIT-2", ptr},
		{"no subtype", att("image/"), "EDIT-2", ptr},
		{"no slash", att("png"), "EDIT-2", ptr},
		{"space in the type", att("image /png"), "EDIT-2", ptr},
		{"bad parameter", att("image/png; charset"), "EDIT-2", ptr},
		{"unclosed quote", att(`image/png; a="b`), "EDIT-2", ptr},
		{"json stays text", att("application/json"), "EDIT-2", ptr},
	})
}

// A registration with duplicate member names is invalid (BASE-5), read
// with check as with the Session.
func TestVerdictRegistrationDuplicateKeys(t *testing.T) {
	dup := strings.Replace(validRegistration, `"failurePolicy":"fail-closed"`, `"failurePolicy":"fail-closed","failurePolicy":"fail-open"`, 1)
	fs := CheckDocument("hooks.json", []byte(dup), tap.Config{}, Options{})
	if len(fs) != 1 || fs[0].Check != "BASE-5" || fs[0].Level != tap.Error || fs[0].Pointer != "/hooks/0/subscriptions/0/failurePolicy" ||
		!strings.Contains(fs[0].Message, `"failurePolicy" appears more than once`) {
		t.Errorf("CheckDocument(duplicate failurePolicy) = %s, want one BASE-5 error at /hooks/0/subscriptions/0/failurePolicy", dump(fs))
	}
	if fs := CheckDocument("hooks.json", []byte(validRegistration), tap.Config{}, Options{}); len(fs) != 0 {
		t.Errorf("CheckDocument(valid registration) = %s, want none", dump(fs))
	}
	// Nested and top-level duplicates alike, and the same key in sibling
	// objects is no duplicate.
	dup2 := strings.Replace(validRegistration, `{"protocolVersion":"draft",`, `{"protocolVersion":"draft","protocolVersion":"draft",`, 1)
	if fs := RegistrationFindings(mustParse(t, dup2)); len(fs) != 1 || fs[0].Pointer != "/protocolVersion" {
		t.Errorf("RegistrationFindings(duplicate protocolVersion) = %s, want one at /protocolVersion", dump(fs))
	}
	// The Session reports it too (a live run given --registration).
	var got []tap.Finding
	tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.File, Registration: mustParse(t, dup), HookID: "com.example.policy"},
		Rules: Set(Options{}), Sink: tap.SinkFunc(func(f tap.Finding) { got = append(got, f) })}).Close()
	if len(withCheck(got, "BASE-5")) != 1 {
		t.Errorf("Session findings = %s, want the one BASE-5", dump(got))
	}
}

// The "\r" decision (docs/checks.md, STDIO-1): AHP-STDIO-001 delimits
// frames by "\n" alone and forbids a literal newline inside one; it says
// nothing of "\r". A "\r\n" ending is a warning (a strict reader sees a
// stray "\r"), never an error; a "\r" where JSON allows white space is
// legal JSON and no finding; a raw "\r" inside a string makes the line
// no JSON at all, as any control character (STDIO-1 on stdio: the line is
// not one JSON-RPC object).
func TestVerdictCarriageReturnOnStdio(t *testing.T) {
	line := vIntercept("")
	stream := func(s string) []tap.Finding {
		return CheckDocument("stream.jsonl", []byte(s), tap.Config{}, Options{})
	}
	loud := func(fs []tap.Finding) (errs, warns []tap.Finding) {
		for _, f := range fs {
			switch f.Level {
			case tap.Error:
				errs = append(errs, f)
			case tap.Warn:
				warns = append(warns, f)
			}
		}
		return
	}
	if errs, warns := loud(stream(line + "\n")); len(errs)+len(warns) != 0 {
		t.Errorf("LF: findings%s%s, want none", dump(errs), dump(warns))
	}
	errs, warns := loud(stream(line + "\r\n"))
	if len(errs) != 0 || len(warns) != 1 || warns[0].Check != "STDIO-1" {
		t.Errorf("CRLF: errors%s warnings%s, want one STDIO-1 warning", dump(errs), dump(warns))
	}
	ws := strings.Replace(line, `"params":{`, "\"params\":\r{", 1)
	if errs, warns := loud(stream(ws + "\n")); len(errs)+len(warns) != 0 {
		t.Errorf("CR as JSON white space: findings%s%s, want none", dump(errs), dump(warns))
	}
	inString := strings.Replace(line, `"path":"native"`, "\"path\":\"nat\rive\"", 1)
	if errs, _ := loud(stream(inString + "\n")); len(errs) != 1 || errs[0].Check != "STDIO-1" || !strings.Contains(errs[0].Message, "non-protocol text") {
		t.Errorf("CR inside a string: errors%s, want one STDIO-1 (not JSON)", dump(errs))
	}
}
