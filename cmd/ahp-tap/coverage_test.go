package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
)

// verdictTraffic is one intercept the registration's hook subscribes to,
// answered with a wrong protocolVersion (BASE-2): BASE-5 and CORR-3 are
// exercised and pass, BASE-2 fails.
const (
	verdictRequest = `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","source":"urn:uuid:0d8c6a52-3f0e-4d8e-9b1a-2f6b9a7c1e01","type":"tool.before","time":"2026-08-24T08:51:14Z","harness":{"name":"example-harness","version":"2.1.0"},"session":{"id":"sess-7","cwd":"/work/repo"},"tool":{"name":"Bash","kind":"shell","input":{"command":"ls -la"},"origin":"native"},"call":{"id":"call-1"},"path":"main"},"capabilities":{"effects":["deny"]}}}`
	verdictAnswer  = `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"2025-06","effects":[]}}`
)

func verdictRegistration(url string) string {
	return `{"protocolVersion":"draft","hooks":[
 {"id":"com.example.s","transport":{"type":"stdio","command":"x","lifecycle":"persistent"},"subscriptions":[{"mode":"intercept","events":["tool.before"],"timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"body"}}]},
 {"id":"com.example.h","transport":{"type":"http","url":"` + url + `"},"subscriptions":[{"mode":"intercept","events":["tool.before"],"timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"body"}}]}]}`
}

// verdicts are the per-check verdicts every report of one run gives for
// its traffic input: "failed", "not checked: REASON", and from JUnit and
// the GitHub summary (which tell them apart) "passed" or "not exercised:
// REASON"; text, JSON and SARIF say "ok" for both.
type verdicts map[string]map[string]string // format -> check -> verdict

// runVerdicts runs ahp-tap with every report format and reads the
// per-check verdicts of input (the traffic; a registration input of check
// is left out of JUnit, and counts as "not exercised" in the GitHub table).
func runVerdicts(t *testing.T, input string, args ...string) verdicts {
	t.Helper()
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	summary := p("step-summary.md")
	os.WriteFile(summary, nil, 0o600)
	cmdArgs := append(args, "--fail-on", "never", "--claim", "role=both,binding=both,profiles=base,tool-interception", "--report", "json="+p("r.json"), "--report", "sarif="+p("r.sarif"),
		"--report", "junit="+p("r.xml"), "--report", "github="+p("r.gh"), "--report", "text", input)
	r := runTapEnv(t, []string{"GITHUB_STEP_SUMMARY=" + summary}, cmdArgs...)
	if r.code != 0 {
		t.Fatalf("ahp-tap %v: exit %d\n%s", cmdArgs, r.code, r.stderr)
	}
	read := func(n string) []byte { b, _ := os.ReadFile(n); return b }
	v := verdicts{}
	set := func(format, check, verdict string) {
		if v[format] == nil {
			v[format] = map[string]string{}
		}
		if old := v[format][check]; old == "failed" || (strings.HasPrefix(old, "not checked") && verdict != "failed") {
			return
		}
		v[format][check] = verdict
	}
	okOr := func(format string) {
		for _, c := range rules.Catalogue {
			if _, ok := v[format][c.ID]; !ok {
				set(format, c.ID, "ok")
			}
		}
	}

	// Text: finding lines and "not checked:" lines.
	failRE := regexp.MustCompile(`(?m)^\S+: (?:#\d+ [^:]*: )?(?:error|warn)\s+([A-Z0-9-]+)`)
	for _, m := range failRE.FindAllStringSubmatch(r.stdout, -1) {
		set("text", m[1], "failed")
	}
	ncRE := regexp.MustCompile(`(?m)not checked: ([A-Z0-9-]+) \((.*)\)$`)
	for _, m := range ncRE.FindAllStringSubmatch(r.stdout, -1) {
		set("text", m[1], "not checked: "+m[2])
	}
	okOr("text")

	// JSON: findings and summary.notPossible.
	var js struct {
		Findings []struct{ Check, Level string }
		Summary  struct {
			NotPossible []report.NotPossible `json:"notPossible"`
			Claim       *report.ClaimMatrix  `json:"claim"`
		}
	}
	if err := json.Unmarshal(read(p("r.json")), &js); err != nil {
		t.Fatal(err)
	}
	for _, f := range js.Findings {
		if f.Level == "error" || f.Level == "warn" {
			set("json", f.Check, "failed")
		}
	}
	for _, np := range js.Summary.NotPossible {
		set("json", np.Check, "not checked: "+np.Reason)
	}
	okOr("json")
	if js.Summary.Claim == nil {
		t.Fatalf("ahp-tap %v: no claim matrix in the JSON report", cmdArgs)
	}
	for _, row := range js.Summary.Claim.Rows {
		set("claim", row.Profile+" "+row.Requirement, row.Status)
	}

	// SARIF: results at error or warning, and the closing notifications.
	var sarif struct {
		Runs []struct {
			Results []struct {
				RuleID string `json:"ruleId"`
				Level  string `json:"level"`
			} `json:"results"`
			Invocations []struct {
				Notes []struct {
					Message struct{ Text string } `json:"message"`
				} `json:"toolExecutionNotifications"`
			} `json:"invocations"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(read(p("r.sarif")), &sarif); err != nil {
		t.Fatal(err)
	}
	for _, res := range sarif.Runs[0].Results {
		if res.Level == "error" || res.Level == "warning" {
			set("sarif", res.RuleID, "failed")
		}
	}
	for _, inv := range sarif.Runs[0].Invocations {
		for _, n := range inv.Notes {
			if m := regexp.MustCompile(`^not checked: ([A-Z0-9-]+) \((.*)\)$`).FindStringSubmatch(n.Message.Text); m != nil {
				set("sarif", m[1], "not checked: "+m[2])
			}
		}
	}
	okOr("sarif")

	// JUnit: the traffic input's suite.
	var ju report.JUnitSuites
	if err := xml.Unmarshal(read(p("r.xml")), &ju); err != nil {
		t.Fatal(err)
	}
	for _, s := range ju.Suites {
		if s.Name != input {
			continue
		}
		for _, c := range s.Cases {
			id := strings.Fields(c.Name)[0]
			switch {
			case c.Failure != nil:
				set("junit", id, "failed")
			case c.Skipped != nil:
				set("junit", id, c.Skipped.Message)
			default:
				set("junit", id, "passed")
			}
		}
	}

	// GitHub: the step summary's table and its "not checked" lines.
	gh := string(read(summary))
	rowRE := regexp.MustCompile(`(?m)^\| ([A-Z0-9-]+) \| \d+ \| \d+ \| \d+ \| (\d+) \| (\d+) \| (\d+) \|$`)
	for _, m := range rowRE.FindAllStringSubmatch(gh, -1) {
		switch {
		case m[3] != "0":
			set("github", m[1], "failed")
		case m[2] != "0":
			set("github", m[1], "passed")
		default:
			set("github", m[1], "skipped")
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^- not checked: ([A-Z0-9-]+) \((.*)\)$`).FindAllStringSubmatch(gh, -1) {
		set("github", m[1], "not checked: "+m[2])
	}
	return v
}

// coarse maps a verdict to what every format can tell: failed, not
// checked (with its reason), or ok.
func coarse(v string) string {
	if v == "failed" || strings.HasPrefix(v, "not checked") {
		return v
	}
	return "ok"
}

// agreeFormats checks that every format of one run gives each check the
// same verdict, and returns the JUnit verdicts (the finest).
func agreeFormats(t *testing.T, name string, v verdicts) map[string]string {
	t.Helper()
	for _, c := range rules.Catalogue {
		ju := v["junit"][c.ID]
		if ju == "" {
			t.Fatalf("%s: JUnit has no test case for %s", name, c.ID)
		}
		for _, f := range []string{"text", "json", "sarif"} {
			if got := v[f][c.ID]; got != coarse(ju) {
				t.Errorf("%s: %s: %s says %q, JUnit %q", name, c.ID, f, got, ju)
			}
		}
		want := coarse(ju)
		if want == "ok" {
			want = "passed"
			if strings.HasPrefix(ju, "not exercised") {
				want = "skipped"
			}
		}
		if got := v["github"][c.ID]; got != want {
			t.Errorf("%s: %s: GitHub summary says %q, JUnit %q", name, c.ID, got, ju)
		}
	}
	return v["junit"]
}

// sameVerdicts checks that two ways of feeding the same traffic give the
// same verdict per check (and the same claim rows, when given).
func sameVerdicts(t *testing.T, aName string, a map[string]string, bName string, b map[string]string) {
	t.Helper()
	var diffs []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		if a[k] != b[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %s %q, %s %q", k, aName, a[k], bName, b[k]))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("the same traffic, different verdicts:\n  %s", strings.Join(diffs, "\n  "))
	}
}

// TestVerdictsAgreeAcrossInputsAndFormats feeds the same traffic several
// ways (a live stdio tap, a live HTTP tap, check of the stream, replay of
// the stream and of each capture, a HAR of the HTTP exchange) and checks
// that every report format of every run gives each check the same verdict:
// failed, passed, not exercised or not checked, with the same reason.
func TestVerdictsAgreeAcrossInputsAndFormats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := filepath.Join(dir, "hooks.json")
	os.WriteFile(reg, []byte(verdictRegistration("http://127.0.0.1:1/agent-hooks")), 0o600)
	stream := filepath.Join(dir, "stream.jsonl")
	os.WriteFile(stream, []byte(verdictRequest+"\n"+verdictAnswer+"\n"), 0o600)

	// Stdio: a live tap's capture, check and replay of the same stream.
	stdioCap := filepath.Join(dir, "stdio.capture")
	cmd := tapCmd([]string{"--capture", stdioCap, "--registration", reg, "--hook", "com.example.s", "--summary"}, "answer", verdictAnswer)
	cmd.Stdin = strings.NewReader(verdictRequest + "\n")
	var liveStderr strings.Builder
	cmd.Stderr = &liveStderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("ahp-tap stdio: %v (%s)", err, out)
	}
	liveV := runVerdicts(t, stdioCap, "replay")
	checkedV := runVerdicts(t, stream, "check", "--registration", reg, "--hook", "com.example.s")
	replayedV := runVerdicts(t, stream, "replay", "--registration", reg, "--hook", "com.example.s")
	live := agreeFormats(t, "replay of the live stdio capture", liveV)
	checked := agreeFormats(t, "check of the stream", checkedV)
	replayed := agreeFormats(t, "replay of the stream", replayedV)
	sameVerdicts(t, "live stdio", live, "check", checked)
	sameVerdicts(t, "live stdio", live, "replay of the stream", replayed)
	sameVerdicts(t, "live stdio claim", liveV["claim"], "check claim", checkedV["claim"])
	// The live tap's own summary says what was not checked as the reports do.
	sameVerdicts(t, "live stdio summary", notCheckedLines(liveStderr.String()), "its replay", notCheckedOf(live))
	sameVerdicts(t, "live stdio claim", liveV["claim"], "replay claim", replayedV["claim"])
	for id, want := range map[string]string{"BASE-2": "failed", "BASE-5": "passed", "CORR-3": "passed", "STDIO-3": "passed",
		"STDIO-2": "not checked: the lifecycle is persistent", "HTTP-1": "not exercised: no HTTP traffic"} {
		if live[id] != want {
			t.Errorf("live stdio: %s %q, want %q", id, live[id], want)
		}
	}

	// Without a registration the lifecycle is unknown: every format says
	// STDIO-3 was not checked, and none offers a flag replay rejects.
	bare := agreeFormats(t, "replay without a registration", runVerdicts(t, stream, "replay"))
	if !strings.HasPrefix(bare["STDIO-3"], "not checked: the lifecycle is unknown") || strings.Contains(bare["STDIO-3"], "or --lifecycle") {
		t.Errorf("STDIO-3 with no lifecycle: %q", bare["STDIO-3"])
	}

	// HTTP: a live tap's capture, and a HAR of the same exchange.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, verdictAnswer)
	}))
	defer up.Close()
	httpCap := filepath.Join(dir, "http.capture")
	lt := startHTTPTap(t, "--upstream", up.URL, "--capture", httpCap, "--registration", reg, "--hook", "com.example.h", "--summary")
	addr := lt.waitFor(t, "listening on", "http://")
	resp, err := http.Post("http://"+addr+"/agent-hooks", "application/json", strings.NewReader(verdictRequest))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	lt.cmd.Wait()
	liveHTTPV := runVerdicts(t, httpCap, "replay")
	liveHTTP := agreeFormats(t, "replay of the live HTTP capture", liveHTTPV)
	sameVerdicts(t, "live HTTP summary", notCheckedLines(lt.stderrText()), "its replay", notCheckedOf(liveHTTP))

	har := filepath.Join(dir, "session.har")
	os.WriteFile(har, []byte(verdictHAR("http://"+addr+"/agent-hooks")), 0o600)
	fromHARV := runVerdicts(t, har, "replay", "--registration", reg, "--hook", "com.example.h")
	fromHAR := agreeFormats(t, "replay of a HAR", fromHARV)
	sameVerdicts(t, "live HTTP", liveHTTP, "HAR", fromHAR)
	sameVerdicts(t, "live HTTP claim", liveHTTPV["claim"], "HAR claim", fromHARV["claim"])
	for id, want := range map[string]string{"BASE-2": "failed", "BASE-5": "passed", "CORR-3": "passed", "HTTP-1": "passed",
		"STDIO-3": "not exercised: no stdio traffic"} {
		if liveHTTP[id] != want {
			t.Errorf("live HTTP: %s %q, want %q", id, liveHTTP[id], want)
		}
	}
}

// verdictHAR is a HAR of one POST of verdictRequest answered with
// verdictAnswer.
func verdictHAR(url string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return `{"log":{"version":"1.2","creator":{"name":"test","version":"1"},"entries":[{
 "startedDateTime":"2026-12-02T16:02:55.039Z","time":3,
 "request":{"method":"POST","url":` + q(url) + `,"httpVersion":"HTTP/1.1","cookies":[],"headers":[{"name":"Content-Type","value":"application/json"}],"queryString":[],
  "postData":{"mimeType":"application/json","text":` + q(verdictRequest) + `},"headersSize":-1,"bodySize":` + fmt.Sprint(len(verdictRequest)) + `},
 "response":{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","cookies":[],"headers":[{"name":"Content-Type","value":"application/json"}],
  "content":{"size":` + fmt.Sprint(len(verdictAnswer)) + `,"mimeType":"application/json","text":` + q(verdictAnswer) + `},"redirectURL":"","headersSize":-1,"bodySize":` + fmt.Sprint(len(verdictAnswer)) + `},
 "cache":{},"timings":{"send":0,"wait":1,"receive":0}}]}}`
}

// runTapEnv is runTap with extra environment variables.
func runTapEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(tapBinary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running ahp-tap %v: %v", args, err)
	}
	return r
}

// notCheckedLines reads a summary's "not checked: CHECK (REASON)" lines.
func notCheckedLines(text string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)not checked: ([A-Z0-9-]+) \((.*)\)$`).FindAllStringSubmatch(text, -1) {
		out[m[1]] = "not checked: " + m[2]
	}
	return out
}

// notCheckedOf keeps the "not checked" verdicts of a verdict map.
func notCheckedOf(v map[string]string) map[string]string {
	out := map[string]string{}
	for k, s := range v {
		if strings.HasPrefix(s, "not checked") {
			out[k] = s
		}
	}
	return out
}
