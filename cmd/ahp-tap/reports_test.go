package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/ahp-tap/ahp-tap/report"
)

func TestReportFlagUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"replay", "--report", "sarif", "--report", "junit", exampleCapture},            // two to stdout
		{"replay", "--report", "pdf=x.pdf", exampleCapture},                             // unknown format
		{"replay", "--format", "json", "--report", "github", exampleCapture},            // --format and a stdout report
		{"replay", "--claim", "role=proxy,binding=stdio,profiles=base", exampleCapture}, // bad claim
		{"replay", "--baseline", "reports_test.go", exampleCapture},                     // a baseline that is not one
		{"check", "--report", "html=/nonexistent/dir/r.html", exampleCapture},
	} {
		r := runTap(t, "", args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stderr == "" {
			t.Errorf("ahp-tap %v: exit %d, stderr %q; want 2 and one line", args, r.code, r.stderr)
		}
	}
	// A report path that is a symlink is refused, and nothing is written through it.
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	link := filepath.Join(dir, "r.sarif")
	os.Symlink(target, link)
	if r := runTap(t, "", "replay", "--report", "sarif="+link, exampleCapture); r.code != 2 || !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("report through a symlink: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
}

// formatFindings runs replay with every format to its own file and
// returns, per format, the findings each report holds as "CHECK line"
// keys (line 0 when a format has none), sorted.
func formatFindings(t *testing.T, capture string, extra ...string) (map[string][]string, result) {
	t.Helper()
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	args := append([]string{"replay", "--fail-on", "never", "--report", "json=" + p("r.json"), "--report", "sarif=" + p("r.sarif"),
		"--report", "junit=" + p("r.xml"), "--report", "github=" + p("r.gh"), "--report", "html=" + p("r.html"), "--report", "text"}, extra...)
	r := runTap(t, "", append(args, capture)...)
	if r.code != 0 {
		t.Fatalf("replay: exit %d\n%s", r.code, r.stderr)
	}
	for _, n := range []string{"r.json", "r.sarif", "r.xml", "r.gh", "r.html"} {
		if fi, err := os.Stat(p(n)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v (mode %v), want a 0600 file", n, err, fi.Mode().Perm())
		}
	}
	out := map[string][]string{}
	read := func(n string) []byte { b, _ := os.ReadFile(p(n)); return b }

	var js struct {
		Findings []struct {
			Check string `json:"check"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(read("r.json"), &js); err != nil {
		t.Fatal(err)
	}
	for _, f := range js.Findings {
		out["json"] = append(out["json"], f.Check)
	}
	var sarif struct {
		Runs []struct {
			Results []struct {
				RuleID string `json:"ruleId"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(read("r.sarif"), &sarif); err != nil {
		t.Fatal(err)
	}
	for _, r := range sarif.Runs[0].Results {
		out["sarif"] = append(out["sarif"], r.RuleID)
	}
	var ju report.JUnitSuites
	if err := xml.Unmarshal(read("r.xml"), &ju); err != nil {
		t.Fatal(err)
	}
	for _, s := range ju.Suites {
		for _, c := range s.Cases {
			var text string
			switch {
			case c.Failure != nil:
				text = c.Failure.Text
			case c.SystemOut != "":
				text = c.SystemOut
			}
			for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
				if l != "" {
					out["junit"] = append(out["junit"], strings.Fields(c.Name)[0])
				}
			}
		}
	}
	ghRE := regexp.MustCompile(`(?m)^(?:::(?:error|warning|notice) [^:]*title=([A-Z0-9-]+)::|[^:\s][^\n]*? (?:error|warn|info) ([A-Z0-9-]+)[ :])`)
	for _, m := range ghRE.FindAllStringSubmatch(string(read("r.gh")), -1) {
		out["github"] = append(out["github"], m[1]+m[2])
	}
	htmlRE := regexp.MustCompile(`"check":"([A-Z0-9-]+)"`)
	page := string(read("r.html"))
	data := page[strings.Index(page, `id="data-findings"`):strings.Index(page, `id="data-exchanges"`)]
	for _, m := range htmlRE.FindAllStringSubmatch(data, -1) {
		out["html"] = append(out["html"], m[1])
	}
	textRE := regexp.MustCompile(`(?m)^\S+: (?:#\d+ [^:]*: )?(?:error|warn|info)\s+([A-Z0-9-]+)`)
	for _, m := range textRE.FindAllStringSubmatch(r.stdout, -1) {
		out["text"] = append(out["text"], m[1])
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out, r
}

func agree(t *testing.T, name string, got map[string][]string) {
	t.Helper()
	want := got["json"]
	if len(want) == 0 {
		t.Fatalf("%s: the JSON report has no findings; the session has deliberate faults", name)
	}
	for _, f := range []string{"sarif", "junit", "github", "html", "text"} {
		if strings.Join(got[f], " ") != strings.Join(want, " ") {
			t.Errorf("%s: %s report holds %v, JSON holds %v", name, f, got[f], want)
		}
	}
}

// A capture from a live stdio run and one from a live HTTP run replay to
// the same findings in every format.
func TestReportsAgreeOnLiveCaptures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	// Live stdio: a banner, a pretty-printed line and a CRLF.
	stdioCap := filepath.Join(dir, "stdio.capture")
	answer := `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`
	in := `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"}},"capabilities":{"effects":["deny"]}}}` + "\r\n{\n"
	cmd := tapCmd([]string{"--capture", stdioCap, "--lifecycle", "per_event", "--timeout", "5s"}, "answer", answer)
	cmd.Stdin = strings.NewReader(in)
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("ahp-tap stdio: %v (%s)", err, out)
	}
	got, _ := formatFindings(t, stdioCap)
	agree(t, "stdio capture", got)

	// Live HTTP: a wrong protocolVersion in the answer, an observe
	// answered 200 with a body, and a 500.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/observe":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{}`)
			return
		case "/fail":
			http.Error(w, "backend down", 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"2025-06","effects":[]}}`)
	}))
	defer up.Close()
	httpCap := filepath.Join(dir, "http.capture")
	lt := startHTTPTap(t, "--upstream", up.URL, "--capture", httpCap)
	addr := lt.waitFor(t, "listening on", "http://")
	for _, c := range []struct{ path, body string }{
		{"/agent-hooks", `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"}},"capabilities":{"effects":["deny"]}}}`},
		{"/observe", `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":{"id":"o1"}}}`},
		{"/fail", `{"jsonrpc":"2.0","id":"e2","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e2"}}}`},
	} {
		resp, err := http.Post("http://"+addr+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	lt.cmd.Wait()
	got, _ = formatFindings(t, httpCap)
	agree(t, "http capture", got)
}

func TestReplayBaselineAndClaim(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "baseline.json")
	r := runTap(t, "", "replay", "--write-baseline", base, exampleCapture)
	if r.code != 1 {
		t.Fatalf("first run: exit %d, want 1 (findings, no baseline yet)\n%s", r.code, r.stderr)
	}
	if fi, err := os.Stat(base); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("baseline file: %v", err)
	}
	r = runTap(t, "", "replay", "--baseline", base, exampleCapture)
	if r.code != 0 || !strings.Contains(r.stdout, "baselined:") {
		t.Errorf("with the baseline: exit %d, stdout %q; want 0 and a baselined line", r.code, r.stdout)
	}
	// Drop the BASE-2 entry: that finding is new again.
	b, _ := os.ReadFile(base)
	var doc report.Baseline
	json.Unmarshal(b, &doc)
	var kept []report.BaselineEntry
	for _, e := range doc.Entries {
		if e.Check != "BASE-2" {
			kept = append(kept, e)
		}
	}
	doc.Entries = append(kept, report.BaselineEntry{Check: "EFF-1", Fingerprint: "ffffffffffffffffffffffffffffffff", Example: "fixed long ago", Count: 1})
	nb, _ := json.Marshal(doc)
	os.WriteFile(base, nb, 0o600)
	r = runTap(t, "", "replay", "--baseline", base, "--report", "github", exampleCapture)
	if r.code != 1 || !strings.Contains(r.stdout, "title=BASE-2::") || !strings.Contains(r.stderr, "stale baseline entry EFF-1") {
		t.Errorf("new finding and stale entry: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}

	// The claim matrix goes in the JSON report.
	r = runTap(t, "", "replay", "--fail-on", "never", "--format", "json", "--claim", "role=backend,binding=stdio,profiles=base,tool-interception", exampleCapture)
	var js struct {
		Summary struct {
			Claim *report.ClaimMatrix `json:"claim"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil || js.Summary.Claim == nil || len(js.Summary.Claim.Rows) == 0 {
		t.Errorf("JSON report has no claim matrix (%v):\n%s", err, r.stdout)
	}

	// The claim matrix for a backend-only stdio capture.
	r = runTap(t, "", "replay", "--fail-on", "never", "--claim", "role=backend,binding=stdio,profiles=base", exampleCapture)
	for _, want := range []string{"conformance claim: role=backend binding=stdio profiles=base", "INCOMPLETE CLAIM",
		"AHP-VER-001      failed", "AHP-DEC-002", "not observable"} {
		if want == "AHP-DEC-002" {
			if strings.Contains(r.stdout, want) {
				t.Errorf("a base-only claim lists tool-interception's AHP-DEC-002")
			}
			continue
		}
		if !strings.Contains(r.stdout, want) {
			t.Errorf("claim output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestCheckReports(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, "bad.jsonl", `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"2025-06"}}`+"\n[1]\n")
	sarif := filepath.Join(dir, "c.sarif")
	r := runTap(t, "", "check", "--report", "sarif="+sarif, "--report", "junit", bad)
	if r.code != 1 {
		t.Fatalf("check: exit %d (%s)", r.code, r.stderr)
	}
	b, _ := os.ReadFile(sarif)
	if !strings.Contains(string(b), `"startLine":2`) || !strings.Contains(string(b), `"ruleId":"BASE-1"`) {
		t.Errorf("SARIF from check lacks BASE-1 at line 2:\n%s", b)
	}
	if !strings.Contains(r.stdout, "<testsuite name=\""+bad+"\"") {
		t.Errorf("JUnit on stdout lacks the input's suite:\n%s", r.stdout)
	}
}

// The JSON report opens with a header naming the tool, the snapshot and
// every input with its size and SHA-256 as stored (a gzip input: the
// compressed bytes), so a report kept as a CI artefact names exactly what
// it judged; an input that was not read whole has no digest.
func TestJSONReportHeader(t *testing.T) {
	t.Parallel()
	capPath := "../../report/testdata/ci.capture.jsonl"
	data, err := os.ReadFile(capPath)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	gzPath := writeFile(t, "ci.capture.jsonl.gz", gz.String())
	r := runTap(t, "", "replay", "--format", "json", capPath, gzPath)
	if r.code != 1 {
		t.Fatalf("replay: exit %d (%s)", r.code, r.stderr)
	}
	var doc struct {
		Header struct {
			Tool, Version, Snapshot string
			Inputs                  []struct {
				Name   string
				Frames uint64
				Bytes  uint64
				SHA256 string
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	h := doc.Header
	if h.Tool != "ahp-tap" || h.Version == "" || h.Snapshot != "draft" || len(h.Inputs) != 2 {
		t.Fatalf("header %+v", h)
	}
	for i, want := range [][]byte{data, gz.Bytes()} {
		sum := sha256.Sum256(want)
		in := h.Inputs[i]
		if in.SHA256 != hex.EncodeToString(sum[:]) || in.Bytes != uint64(len(want)) || in.Frames != 8 {
			t.Errorf("input %d: %+v; want %d bytes, sha256 %x, 8 frames", i, in, len(want), sum)
		}
	}
}

// Replayed captures and streams locate each result at its line: a
// capture's frame record, a stream's line (blank lines count, they are
// frames too).
func TestReplayResultLines(t *testing.T) {
	t.Parallel()
	r := runTap(t, "", "replay", "--report", "github", "../../report/testdata/ci.capture.jsonl")
	for _, want := range []string{"line=6,title=BASE-2", "line=7,title=STDIO-1", "line=9,title=BASE-1", "line=10,title=CORR-2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("capture annotations lack %q:\n%s", want, r.stdout)
		}
	}
	stream := writeFile(t, "s.jsonl", "\n"+`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"2025-06"}}`+"\n\n[1]\n")
	r = runTap(t, "", "replay", "--report", "github", stream)
	for _, want := range []string{"line=2,title=BASE-2", "line=4,title=BASE-1", "line=3,title=STDIO-1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stream annotations lack %q:\n%s", want, r.stdout)
		}
	}
}
