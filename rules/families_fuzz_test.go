package rules

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Fuzz targets for every rule family, the edit evaluator and registration
// validation. Seeds are read from ../shared/ahp at test time (never copied
// here). bench/fuzz.sh runs each for a bounded time; crashers found become
// regression inputs under testdata/fuzz/<target>/, which `go test` runs.

// fixtureDocs returns every upstream fixture (a .json document whole, each
// line of a .jsonl stream) and the repository's own testdata messages.
func fixtureDocs(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, glob := range []string{
		filepath.Join(sharedAHP, "fixtures/draft/*/*.json"),
		filepath.Join(sharedAHP, "fixtures/draft/*/*.jsonl"),
		"testdata/*.json",
		"../cmd/ahp-tap/testdata/*.jsonl",
	} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			if !strings.HasSuffix(p, ".jsonl") {
				out = append(out, data)
				continue
			}
			for _, line := range bytes.Split(data, []byte("\n")) {
				if len(bytes.TrimSpace(line)) > 0 {
					out = append(out, line)
				}
			}
		}
	}
	return out
}

// fuzzRegistration is a registration the dispatch family judges frames
// against: every event, intercept, a short timeout.
const fuzzRegistration = `{"protocolVersion":"draft","hooks":[{"id":"h","transport":{"type":"stdio","command":["x"],"lifecycle":"persistent"},"subscriptions":[{"events":["*"],"mode":"intercept","timeoutMs":1000}]}]}`

// fuzzFamily fuzzes one rule family through the engine: a request and a
// response (any bytes) on a stdio link with a registration. No input makes
// a rule panic (a TAP-2 finding), every finding names a catalogue check,
// and feeding the same frames again gives the same findings (a live run
// and its replay agree).
func fuzzFamily(f *testing.F, family func() []tap.Rule) {
	docs := fixtureDocs(f)
	for i, d := range docs {
		f.Add(d, docs[(i+1)%len(docs)])
		f.Add(d, []byte(nil))
	}
	f.Add([]byte(benchRequest), []byte(benchResponse))
	reg, _, err := tap.ParseJSON([]byte(fuzzRegistration))
	if err != nil {
		f.Fatal(err)
	}
	run := func(req, resp []byte) []string {
		cfg := tap.Config{Registration: reg, HookID: "h", Transport: tap.Stdio, Timeout: time.Second}
		e := tap.NewEngine(cfg, family())
		t0 := time.Unix(1_700_000_000, 0)
		var out []string
		for i, fr := range []*tap.Frame{
			{Dir: tap.FromHarness, Transport: tap.Stdio, Time: t0, Raw: req, Framing: tap.Framing{Line: true}},
			{Dir: tap.FromBackend, Transport: tap.Stdio, Time: t0.Add(time.Millisecond), Raw: resp, Framing: tap.Framing{Line: true}},
		} {
			if i == 1 && resp == nil {
				continue
			}
			for _, fd := range e.Feed(fr) {
				out = append(out, fd.String())
			}
		}
		for _, fd := range e.Finish() {
			out = append(out, fd.String())
		}
		return out
	}
	f.Fuzz(func(t *testing.T, req, resp []byte) {
		if bytes.ContainsAny(req, "\n") || bytes.ContainsAny(resp, "\n") {
			return // one line each: the framing family sees lines
		}
		got := run(req, resp)
		for _, s := range got {
			if strings.Contains(s, "TAP-2") {
				t.Fatalf("a rule failed internally on %q, %q: %s", req, resp, s)
			}
		}
		if again := run(req, resp); !reflect.DeepEqual(got, again) {
			t.Fatalf("findings differ on a second run:\n%v\n%v", got, again)
		}
		e := tap.NewEngine(tap.Config{}, family())
		for _, fd := range e.Feed(&tap.Frame{Dir: tap.FromHarness, Raw: req}) {
			if _, ok := CheckByID(fd.Check); !ok && fd.Check != "TAP-1" {
				t.Fatalf("finding %v names no catalogue check", fd)
			}
		}
	})
}

func FuzzEnvelopeFamily(f *testing.F)    { fuzzFamily(f, envelopeRules) }
func FuzzFramingFamily(f *testing.F)     { fuzzFamily(f, framingRules) }
func FuzzVersionFamily(f *testing.F)     { fuzzFamily(f, versionRules) }
func FuzzUnknownFamily(f *testing.F)     { fuzzFamily(f, unknownRules) }
func FuzzExtensionFamily(f *testing.F)   { fuzzFamily(f, extensionRules) }
func FuzzDispatchFamily(f *testing.F)    { fuzzFamily(f, dispatchRules) }
func FuzzRetryFamily(f *testing.F)       { fuzzFamily(f, retryRules) }
func FuzzErrorFamily(f *testing.F)       { fuzzFamily(f, errorRules) }
func FuzzHarnessFamily(f *testing.F)     { fuzzFamily(f, harnessRules) }
func FuzzAuthorityFamily(f *testing.F)   { fuzzFamily(f, authorityRules) }
func FuzzCorrelationFamily(f *testing.F) { fuzzFamily(f, correlationRules) }
func FuzzCapabilityFamily(f *testing.F)  { fuzzFamily(f, capabilityRules) }
func FuzzEventFamily(f *testing.F)       { fuzzFamily(f, eventRules) }
func FuzzEffectFamily(f *testing.F)      { fuzzFamily(f, effectRules) }
func FuzzContentFamily(f *testing.F)     { fuzzFamily(f, contentRules) }
func FuzzEditFamily(f *testing.F)        { fuzzFamily(f, editRules) }
func FuzzDefaultRules(f *testing.F)      { fuzzFamily(f, func() []tap.Rule { return Default(Options{}) }) }

// FuzzHTTPFamily: the HTTP family (HTTP-1..3, AUTH-1) on HTTP frames with
// an envelope; the same properties.
func FuzzHTTPFamily(f *testing.F) {
	for _, d := range fixtureDocs(f) {
		f.Add(d, "application/json", 200, 0)
	}
	f.Add([]byte(`{"x":"[ahp-tap: credential redacted]"}`), "text/plain", 500, 1)
	f.Fuzz(func(t *testing.T, body []byte, ctype string, status, leaks int) {
		run := func() []string {
			e := tap.NewEngine(tap.Config{Transport: tap.HTTP}, httpRules())
			var out []string
			for _, fr := range []*tap.Frame{
				{Dir: tap.FromHarness, Transport: tap.HTTP, Raw: body, HTTP: &tap.HTTPMeta{Method: "POST", Header: map[string][]string{"Content-Type": {ctype}}, AuthorizationCount: leaks % 3, CredentialInBody: leaks}},
				{Dir: tap.FromBackend, Transport: tap.HTTP, Raw: body, HTTP: &tap.HTTPMeta{Status: status, Header: map[string][]string{"Content-Type": {ctype}}, CredentialInBody: leaks}},
			} {
				for _, fd := range e.Feed(fr) {
					out = append(out, fd.String())
				}
			}
			n := tap.Note{Kind: tap.NoteHTTPResponse, HTTP: &tap.HTTPMeta{Status: status, CredentialInBody: leaks}}
			for _, fd := range e.Note(n) {
				out = append(out, fd.String())
			}
			return append(out, fmtFindings(e.Finish())...)
		}
		got := run()
		for _, s := range got {
			if strings.Contains(s, "TAP-2") {
				t.Fatalf("a rule failed internally: %s", s)
			}
		}
		if again := run(); !reflect.DeepEqual(got, again) {
			t.Fatalf("findings differ on a second run")
		}
	})
}

func fmtFindings(fs []tap.Finding) []string {
	out := make([]string, len(fs))
	for i, fd := range fs {
		out[i] = fd.String()
	}
	return out
}

// FuzzEditEvaluator: the edit evaluator never panics on any context and
// effect list, judges the same input the same way, and an accepted result
// carries no rejection reason.
func FuzzEditEvaluator(f *testing.F) {
	docs := fixtureDocs(f)
	for i, d := range docs {
		f.Add(d, docs[(i+7)%len(docs)])
	}
	f.Fuzz(func(t *testing.T, ctxDoc, respDoc []byte) {
		cv, _, err := tap.ParseJSON(ctxDoc)
		if err != nil {
			return
		}
		rv, _, err := tap.ParseJSON(respDoc)
		if err != nil {
			return
		}
		var ctx EditContext
		if p := cv.Get("params"); p != nil {
			ctx = EventEditContext(p.Get("event"), p.Get("capabilities"), nil)
		} else if ctx, err = ParseEditContext(cv); err != nil {
			return
		}
		effects := rv.Path("result", "effects")
		if effects == nil {
			effects = rv.Get("effects")
		}
		a, b := EvaluateEdits(ctx, effects), EvaluateEdits(ctx, effects)
		if a.Accepted != b.Accepted || len(a.Reasons) != len(b.Reasons) {
			t.Fatalf("EvaluateEdits is not deterministic: %+v then %+v", a, b)
		}
		if a.Accepted && len(a.Reasons) > 0 {
			t.Fatalf("accepted with reasons %+v", a.Reasons)
		}
		_ = EvaluateChain(ctx, []*tap.Value{rv.Get("result"), rv.Get("result")})
	})
}

// FuzzRegistration: registration validation never panics, names only
// catalogue checks, and points inside the document.
func FuzzRegistration(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(sharedAHP, "fixtures/draft/registration/*.json"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(fuzzRegistration))
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, _, err := tap.ParseJSON(data)
		if err != nil {
			return
		}
		for _, fd := range RegistrationFindings(reg) {
			if _, ok := CheckByID(fd.Check); !ok {
				t.Fatalf("finding %v names no catalogue check", fd)
			}
			if fd.Pointer != "" && !strings.HasPrefix(fd.Pointer, "/") {
				t.Fatalf("finding %v: pointer %q is not a JSON Pointer", fd, fd.Pointer)
			}
		}
		_ = tap.FindHook(reg, "h")
		// A whole document check agrees with itself.
		a := CheckDocument("reg.json", data, tap.Config{}, Options{})
		b := CheckDocument("reg.json", data, tap.Config{}, Options{})
		if !reflect.DeepEqual(fmtFindings(a), fmtFindings(b)) {
			t.Fatalf("CheckDocument is not deterministic")
		}
	})
}
