package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// ciCapture is a capture from a persistent stdio backend (the README's
// example): a clean exchange (evt-1), a wrong protocolVersion and a late
// response (BASE-2, CORR-3), a banner on stdout (STDIO-1), a response that
// is not UTF-8 (BASE-1), and a request never answered (CORR-2, reported at
// end of stream). Nothing in it is HTTP or a hooks/capabilities exchange:
// those checks are not exercised.
const ciCapture = "testdata/ci.capture.jsonl"

// replayInto replays a capture through the real rules into a Run, as
// ahp-tap replay does: one engine per conn configured from the header.
func replayInto(t testing.TB, path string, cfg RunConfig) *End {
	t.Helper()
	r, err := NewRun(cfg)
	if err != nil {
		t.Fatal(err)
	}
	replayFile(t, r, path)
	end, err := r.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	return end
}

func replayFile(t testing.TB, r *Run, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r.StartInput(path)
	// The entry point ahp-tap replay uses: one session per segment,
	// configured from its header, fed to the run.
	err = r.Replay(capture.NewReader(f), func(h *capture.Header) (tap.SessionConfig, error) {
		cfg, err := h.Config(tap.Config{}, capture.Overrides{})
		return tap.SessionConfig{Config: cfg, Rules: rules.Set(rules.Options{})}, err
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.EndInput(InputEnd{SHA256: "0000000000000000000000000000000000000000000000000000000000000000"})
}

func header() Header {
	return Header{Tool: "ahp-tap", Version: "0.0.0-test", Snapshot: "draft", Catalogue: rules.Catalogue}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./report -run %s -update to accept); got:\n%s", name, t.Name(), got)
	}
}

// ciFindings are the checks the capture's findings carry.
var ciChecks = []string{"BASE-1", "BASE-2", "STDIO-1", "CORR-2", "CORR-3"}

func TestReportsSARIF(t *testing.T) {
	var buf bytes.Buffer
	end := replayInto(t, ciCapture, RunConfig{Header: header(), Writers: []Writer{NewSARIF(&buf)}, FailOn: tap.Error})
	golden(t, "ci.sarif.golden", buf.Bytes())
	validateSARIF(t, buf.Bytes())

	var doc struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct{ ID string } `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Locations []struct {
					Physical struct {
						Artifact struct{ URI string } `json:"artifactLocation"`
						Region   *struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				Fingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	run := doc.Runs[0]
	if len(run.Tool.Driver.Rules) != len(rules.Catalogue) {
		t.Errorf("rules = %d, want the whole catalogue (%d)", len(run.Tool.Driver.Rules), len(rules.Catalogue))
	}
	total := 0
	for _, cc := range end.ByCheck {
		total += cc.Total()
	}
	if len(run.Results) != total || total == 0 {
		t.Errorf("results = %d, want %d findings", len(run.Results), total)
	}
	seen := map[string]bool{}
	for _, r := range run.Results {
		seen[r.RuleID] = true
		loc := r.Locations[0].Physical
		if loc.Artifact.URI != "testdata/ci.capture.jsonl" {
			t.Errorf("%s artifact uri = %q, want testdata/ci.capture.jsonl", r.RuleID, loc.Artifact.URI)
		}
		if r.Fingerprints["ahpTapFinding/v1"] == "" {
			t.Errorf("%s has no partial fingerprint", r.RuleID)
		}
		if r.RuleID == "BASE-2" && (loc.Region == nil || loc.Region.StartLine != 6) {
			t.Errorf("BASE-2 region = %+v, want startLine 6 (the capture line of frame #4)", loc.Region)
		}
		if r.RuleID == "CORR-2" && (loc.Region == nil || loc.Region.StartLine != 10) {
			t.Errorf("CORR-2 (end of stream) region = %+v, want startLine 10 (the unanswered request)", loc.Region)
		}
	}
	for _, c := range ciChecks {
		if !seen[c] {
			t.Errorf("no SARIF result for %s", c)
		}
	}
}

func validateSARIF(t *testing.T, doc []byte) {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := jsonschema.UnmarshalJSON(mustOpen(t, "testdata/sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	if err := c.AddResource(id, sch); err != nil {
		t.Fatal(err)
	}
	c.AssertFormat()
	s, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("SARIF output is not JSON: %v", err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("SARIF output is not valid SARIF 2.1.0: %v", err)
	}
}

func mustOpen(t *testing.T, path string) io.Reader {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b)
}

// The schema check can fail: a result without a message is not SARIF.
func TestSARIFSchemaRejectsBrokenLog(t *testing.T) {
	ft := &testing.T{}
	validateSARIF(ft, []byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"ruleId":"BASE-1"}]}]}`))
	if !ft.Failed() {
		t.Error("a result without a message passed the SARIF schema")
	}
}

func TestSARIFCap(t *testing.T) {
	var buf bytes.Buffer
	s := NewSARIF(&buf)
	s.MaxResults = 2
	end := replayInto(t, ciCapture, RunConfig{Header: header(), Writers: []Writer{s}})
	validateSARIF(t, buf.Bytes())
	if got := strings.Count(buf.String(), `"ruleId"`); got != 2 {
		t.Errorf("results = %d, want the cap (2)", got)
	}
	n := 0
	for _, cc := range end.ByCheck {
		n += cc.Total()
	}
	if s.Dropped() != n-2 || !strings.Contains(buf.String(), "results left out") {
		t.Errorf("Dropped() = %d, want %d and a toolExecutionNotification", s.Dropped(), n-2)
	}
}

func TestReportsJUnit(t *testing.T) {
	var buf bytes.Buffer
	replayInto(t, ciCapture, RunConfig{Header: header(), Writers: []Writer{NewJUnit(&buf)}})
	golden(t, "ci.junit.golden", buf.Bytes())

	var doc JUnitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit output does not parse: %v", err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("suites = %d, want 1 (one per input)", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Tests != len(rules.Catalogue) || len(s.Cases) != s.Tests {
		t.Errorf("tests = %d (cases %d), want one per catalogue check (%d)", s.Tests, len(s.Cases), len(rules.Catalogue))
	}
	byCheck := map[string]JUnitCase{}
	failures, skipped := 0, 0
	for _, c := range s.Cases {
		byCheck[strings.Fields(c.Name)[0]] = c
		if c.Classname != ciCapture {
			t.Errorf("classname = %q, want the input", c.Classname)
		}
		if c.Failure != nil {
			failures++
		}
		if c.Skipped != nil {
			skipped++
		}
	}
	if failures != s.Failures || skipped != s.Skipped || doc.Failures != failures || doc.Tests != s.Tests {
		t.Errorf("counts: suite failures=%d skipped=%d, cases failures=%d skipped=%d, total tests=%d failures=%d",
			s.Failures, s.Skipped, failures, skipped, doc.Tests, doc.Failures)
	}
	for _, c := range ciChecks {
		if byCheck[c].Failure == nil {
			t.Errorf("%s: no <failure>", c)
		} else if !strings.Contains(byCheck[c].Failure.Text, ciCapture+":") {
			t.Errorf("%s failure text %q does not name input:line", c, byCheck[c].Failure.Text)
		}
	}
	if c := byCheck["CORR-1"]; c.Failure != nil || c.Skipped != nil {
		t.Errorf("CORR-1 (intercepts with matching ids) = %+v, want passing", c)
	}
	for _, c := range []string{"HTTP-1", "CAP-2", "EDIT-4"} {
		if byCheck[c].Skipped == nil || !strings.Contains(byCheck[c].Skipped.Message, "not exercised") {
			t.Errorf("%s = %+v, want <skipped> not exercised", c, byCheck[c])
		}
	}
}

func TestReportsGitHub(t *testing.T) {
	var buf bytes.Buffer
	sum := filepath.Join(t.TempDir(), "summary.md")
	end := replayInto(t, ciCapture, RunConfig{Header: header(), Writers: []Writer{NewGitHub(&buf, sum)}, FailOn: tap.Error})
	golden(t, "ci.github.golden", buf.Bytes())
	out := buf.String()
	if !strings.Contains(out, "::error file=testdata/ci.capture.jsonl,line=6,title=BASE-2::") {
		t.Errorf("no BASE-2 annotation with file and line:\n%s", out)
	}
	if strings.Count(out, "::group::") != strings.Count(out, "::endgroup::") || strings.Count(out, "::group::") != len(end.ByCheck) {
		t.Errorf("groups not one per check with findings (%d):\n%s", len(end.ByCheck), out)
	}
	md, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "### ahp-tap: failed") || !strings.Contains(string(md), "| BASE-2 | 1 |") {
		t.Errorf("step summary:\n%s", md)
	}
	golden(t, "ci.github-summary.golden", md)
}

func TestGitHubAnnotationCapAndEscaping(t *testing.T) {
	var buf bytes.Buffer
	g := NewGitHub(&buf, "")
	g.Begin(&Header{Catalogue: rules.Catalogue})
	for i := 0; i < GitHubMaxAnnotations+5; i++ {
		g.Finding(&Item{Input: "a", URI: "a,b:c", Line: i + 1, Finding: tap.Finding{Check: "BASE-1", Level: tap.Error,
			Message: "bad\n::error::injected 100%"}})
	}
	g.End(&End{})
	out := buf.String()
	if n := strings.Count(out, "::error file="); n != GitHubMaxAnnotations {
		t.Errorf("annotations = %d, want %d", n, GitHubMaxAnnotations)
	}
	if strings.Contains(out, "\n::error::injected") {
		t.Error("a newline in a message started a workflow command")
	}
	if !strings.Contains(out, "file=a%2Cb%3Ac") || !strings.Contains(out, "100%25") {
		t.Errorf("properties or data not escaped:\n%s", out)
	}
	if !strings.Contains(out, "5 more error findings were listed in the log") {
		t.Errorf("no notice of annotations left out:\n%s", out)
	}
}

func TestReportsHTML(t *testing.T) {
	var buf bytes.Buffer
	h := NewHTML(&buf)
	h.Now = func() time.Time { return time.Date(2026, 8, 24, 9, 0, 0, 0, time.UTC) }
	replayInto(t, ciCapture, RunConfig{Header: header(), Writers: []Writer{h}})
	golden(t, "ci.html.golden", buf.Bytes())
	page := buf.String()
	for _, bad := range []string{"http://", "https://", "<link", "src="} {
		if strings.Contains(strings.ReplaceAll(page, "https://github.com/ahp-tap/ahp-tap", ""), bad) {
			t.Errorf("page contains %q: not self-contained", bad)
		}
	}
	if strings.Count(page, "</script>") != 6 {
		t.Errorf("</script> appears %d times, want 6 (data must not close a script)", strings.Count(page, "</script>"))
	}
}

func TestBaseline(t *testing.T) {
	// Write a baseline from the capture.
	r, err := NewRun(RunConfig{Header: header()})
	if err != nil {
		t.Fatal(err)
	}
	replayFile(t, r, ciCapture)
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var bb bytes.Buffer
	if err := r.NewBaseline().Write(&bb); err != nil {
		t.Fatal(err)
	}
	golden(t, "ci.baseline.golden", bb.Bytes())
	base, err := ReadBaseline(bytes.NewReader(bb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}

	// Every finding accepted: the run passes, nothing counted.
	end := replayInto(t, ciCapture, RunConfig{Header: header(), Baseline: base, FailOn: tap.Error})
	if end.Failing() || end.Levels.Total() != 0 || end.Baselined == 0 {
		t.Errorf("accepted baseline: failing=%v levels=%+v baselined=%d, want passing, 0 counted", end.Failing(), end.Levels, end.Baselined)
	}

	// One entry removed: its finding is new and fails the run.
	var corr3 BaselineEntry
	short := &Baseline{Version: 1}
	for _, e := range base.Entries {
		if e.Check == "CORR-3" {
			corr3 = e
			continue
		}
		short.Entries = append(short.Entries, e)
	}
	if corr3.Fingerprint == "" {
		t.Fatal("no CORR-3 entry in the baseline")
	}
	end = replayInto(t, ciCapture, RunConfig{Header: header(), Baseline: short, FailOn: tap.Warn})
	if !end.Failing() || end.Levels.Total() != 1 {
		t.Errorf("new finding: failing=%v levels=%+v, want failing with 1 finding (CORR-3)", end.Failing(), end.Levels)
	}

	// An entry that no longer occurs is stale and fails the run.
	stale := &Baseline{Version: 1, Entries: append(append([]BaselineEntry{}, base.Entries...),
		BaselineEntry{Check: "EFF-1", Fingerprint: "00000000000000000000000000000000", Example: "gone", Count: 1})}
	var gh bytes.Buffer
	end = replayInto(t, ciCapture, RunConfig{Header: header(), Baseline: stale, FailOn: tap.Error, Writers: []Writer{NewGitHub(&gh, "")}})
	if !end.Failing() || len(end.Stale) != 1 || end.Levels.Total() != 0 {
		t.Errorf("stale entry: failing=%v stale=%d levels=%+v, want failing on 1 stale entry", end.Failing(), len(end.Stale), end.Levels)
	}
	if !strings.Contains(gh.String(), "stale baseline entry EFF-1") {
		t.Errorf("the report does not name the stale entry:\n%s", gh.String())
	}
}

// Fingerprints do not depend on where the frame is: the same capture
// with a blank line and a note inserted at the top gives the same set.
func TestFingerprintsIgnoreLines(t *testing.T) {
	data, err := os.ReadFile(ciCapture)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	shifted := lines[0] + lines[1] + lines[1] + strings.Join(lines[2:], "")
	p := filepath.Join(t.TempDir(), "shifted.jsonl")
	os.WriteFile(p, []byte(shifted), 0o600)
	fps := func(path string) map[string]bool {
		r, _ := NewRun(RunConfig{Header: header()})
		replayFile(t, r, path)
		r.Close()
		out := map[string]bool{}
		for _, e := range r.NewBaseline().Entries {
			out[e.Fingerprint] = true
		}
		return out
	}
	a, b := fps(ciCapture), fps(p)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("fingerprints: %d vs %d", len(a), len(b))
	}
	for k := range a {
		if !b[k] {
			t.Errorf("fingerprint %s changed when lines moved", k)
		}
	}
}

func TestClaimBackendStdio(t *testing.T) {
	c, err := ParseClaim("role=backend,binding=stdio,profiles=base,tool-interception", "", "draft")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	end := replayInto(t, ciCapture, RunConfig{Header: header(), Claim: c})
	m := end.Claim
	if m == nil {
		t.Fatal("no claim matrix")
	}
	if err := m.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	golden(t, "ci.claim.golden", out.Bytes())
	rows := map[string]ClaimRow{}
	for _, r := range m.Rows {
		rows[r.Profile+" "+r.Requirement] = r
	}
	want := map[string]string{
		"base AHP-VER-001":              "failed",         // BASE-2: the backend's result carries 2025-06
		"stdio AHP-STDIO-001":           "failed",         // STDIO-1: a banner on stdout
		"base AHP-EXT-001":              "passed",         // deny codes are reverse-DNS
		"tool-interception AHP-DEC-002": "not observable", // deny enforcement
		"base AHP-REG-002":              "not observable", // dispatch judges the harness, not the backend
		"tool-interception AHP-CAP-002": "not observable",
		"base AHP-EDIT-001":             "not exercised", // no modify effect
	}
	for k, st := range want {
		if rows[k].Status != st {
			t.Errorf("%s = %q (%s), want %q", k, rows[k].Status, rows[k].Why, st)
		}
	}
	if _, ok := rows["http AHP-HTTP-001"]; ok {
		t.Error("binding=stdio claim lists the HTTP binding's requirements")
	}
	if m.Incomplete != "" {
		t.Errorf("base+tool-interception+stdio is complete, got %q", m.Incomplete)
	}
	c2, _ := ParseClaim("role=backend,binding=stdio,profiles=base", "", "draft")
	end = replayInto(t, ciCapture, RunConfig{Header: header(), Claim: c2})
	if !strings.Contains(end.Claim.Incomplete, "incomplete without a capability-profile claim") {
		t.Errorf("base-only claim: Incomplete = %q", end.Claim.Incomplete)
	}
}

func TestParseClaimErrors(t *testing.T) {
	for _, s := range []string{"", "role=proxy,binding=stdio,profiles=base", "role=backend,binding=ws,profiles=base",
		"role=backend,binding=stdio", "role=backend,binding=stdio,profiles=base,nope", "role=backend,binding=stdio,profiles=stdio", "colour=red"} {
		if _, err := ParseClaim(s, "", "draft"); err == nil {
			t.Errorf("ParseClaim(%q) = nil error, want one", s)
		}
	}
	c, err := ParseClaim("role=both,binding=both,profiles=base,lifecycle-observation", "../../shared/ahp", "draft")
	if err != nil {
		t.Fatalf("with --spec: %v", err)
	}
	if c.Texts["AHP-VER-001"] == "" || len(c.Requirements["base"]) == 0 {
		t.Errorf("--spec did not load requirement texts or profiles")
	}
}
