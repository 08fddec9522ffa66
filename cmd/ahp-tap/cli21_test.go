package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/ahp-tap/ahp-tap/examples"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests for issue 21 items 7, 11, 12 and 13: each runs the built binary
// as a user does.

// readmeBlocks returns the shell blocks of page (README.md, docs/…)
// marked "<!-- readme-test -->", in order.
func readmeBlocks(t *testing.T, page string) []string {
	t.Helper()
	data, err := os.ReadFile("../../" + page)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(data)
	for {
		i := strings.Index(rest, "<!-- readme-test -->")
		if i < 0 {
			return blocks
		}
		rest = rest[i:]
		start := strings.Index(rest, "```sh\n")
		if start < 0 {
			t.Fatal("README: a readme-test marker without a ```sh block after it")
		}
		rest = rest[start+len("```sh\n"):]
		end := strings.Index(rest, "\n```")
		if end < 0 {
			t.Fatal("README: an unterminated ```sh block")
		}
		blocks = append(blocks, rest[:end+1])
		rest = rest[end:]
	}
}

// TestREADMEUseCases runs the README's use-case blocks verbatim, in
// order, in an empty directory holding only what a fresh clone has
// (examples/), with the built ahp-tap on PATH (issue 21 item 12): the
// stdio wrap (persistent and per_event), the HTTP reverse proxy, and the
// CI replay of what they recorded.
func TestREADMEUseCases(t *testing.T) {
	blocks := readmeBlocks(t, "README.md")
	if len(blocks) < 3 {
		t.Fatalf("README has %d readme-test blocks; want the three use cases", len(blocks))
	}
	dir := freshClone(t)
	runBlocks(t, dir, "README", blocks)
	checkREADMEResults(t, dir)
	// docs/http.md's trial, in a clone of its own.
	httpBlocks := readmeBlocks(t, "docs/http.md")
	if len(httpBlocks) == 0 {
		t.Fatal("docs/http.md has no readme-test block")
	}
	dir = freshClone(t)
	runBlocks(t, dir, "docs/http.md", httpBlocks)
	if _, err := os.Stat(filepath.Join(dir, "http.capture")); err != nil {
		t.Errorf("docs/http.md's trial made no http.capture: %v", err)
	}
	if r := runTapIn(t, dir, "replay", "--fail-on", "warn", "http.capture"); r.code != 0 || !strings.Contains(r.stdout, "12 frames audited") {
		t.Errorf("replay of docs/http.md's trial: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// docs/mock.md's trial: record, then each mock side.
	mockBlocks := readmeBlocks(t, "docs/mock.md")
	if len(mockBlocks) == 0 {
		t.Fatal("docs/mock.md has no readme-test block")
	}
	runBlocks(t, freshClone(t), "docs/mock.md", mockBlocks)
}

// freshClone makes an empty directory holding what a fresh clone has that
// the documented commands use (examples/), with the built ahp-tap on the
// PATH runBlocks gives (.bin).
func freshClone(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, ".bin")
	if err := os.MkdirAll(filepath.Join(dir, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tapBinary, filepath.Join(bin, "ahp-tap")); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("../../examples")
	if err != nil {
		t.Fatalf("the clone has no examples/: %v", err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join("../../examples", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "examples", e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runBlocks runs each block with bash -e in dir, in order, failing the test
// at the first that fails.
func runBlocks(t *testing.T, dir, page string, blocks []string) {
	t.Helper()
	bin := filepath.Join(dir, ".bin")
	for i, block := range blocks {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-eo", "pipefail", "-c", block)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
		// Its own process group: a block that fails leaves no background
		// job behind.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		cancel()
		if err != nil {
			t.Fatalf("%s block %d failed (%v):\n%s\noutput:\n%s", page, i+1, err, block, out)
		}
		t.Logf("%s block %d:\n%s", page, i+1, out)
	}
}

// checkREADMEResults checks what the README's blocks say they make.
func checkREADMEResults(t *testing.T, dir string) {
	t.Helper()
	// What the blocks say they make, they made.
	for _, f := range []string{"session.capture", "http.capture", "violations.log", "ahp.sarif", "ahp-junit.xml", "ahp-report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the README's blocks did not make %s: %v", f, err)
		}
	}
	r := runTapIn(t, dir, "replay", "--format", "json", "session.capture", "http.capture")
	var rep struct {
		Summary struct {
			Inputs []struct {
				Name   string `json:"name"`
				Frames int    `json:"frames"`
			} `json:"inputs"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("replay --format json: %v\n%s", err, r.stdout)
	}
	// 12 frames per session: persistent and per_event over stdio, one
	// over HTTP.
	want := map[string]int{"session.capture": 24, "http.capture": 12}
	for _, in := range rep.Summary.Inputs {
		if in.Frames != want[in.Name] {
			t.Errorf("%s: %d frames audited, want %d", in.Name, in.Frames, want[in.Name])
		}
	}
	if r.code != 0 {
		t.Errorf("replay of the README's recordings: exit %d, %s", r.code, r.stderr)
	}
}

// TestBadInputIssue21 feeds each mistake of issue 21 item 7 to the binary:
// one line naming the command, exit 2; and the right input still works.
func TestBadInputIssue21(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exampleCapture, err := filepath.Abs(exampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	arr := writeFile(t, "arr.json", `[{"id":"x"}]`)
	stream := writeFile(t, "s.jsonl", `{"jsonrpc":"2.0","id":"e1","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`+"\n")
	logPath := filepath.Join(dir, "found.log")
	if r := runTapIn(t, dir, "demo", "--log", logPath); r.code != 0 {
		t.Fatalf("demo --log: exit %d %s", r.code, r.stderr)
	}
	cases := []struct {
		args []string
		want string   // in the error line
		not  []string // never in stderr
	}{
		{[]string{"tail", dir}, "ahp-tap tail: " + dir + " is a directory, not a violation log", nil},
		{[]string{"tail", exampleCapture}, "is a capture, not a violation log: re-check it with 'ahp-tap replay " + exampleCapture + "'", []string{"skipped"}},
		{[]string{"tail", stream}, "holds AHP messages, not findings", []string{"skipped"}},
		{[]string{"check", "--registration", arr, "--hook", "x", stream}, "ahp-tap check: registration " + arr + " must be a JSON object with protocolVersion and hooks, not an array", []string{"no hook"}},
		{[]string{"replay", "--registration", arr, stream}, "ahp-tap replay: registration " + arr + " must be a JSON object", nil},
		{[]string{"check", "--timeout", "5", stream}, "ahp-tap check: --timeout 5: a duration needs a unit: give one, e.g. 5s", []string{"parse error"}},
		{[]string{"replay", "--timeout=fast", stream}, `ahp-tap replay: --timeout "fast" is not a duration`, []string{"parse error"}},
		{[]string{"replay", "--direction", "harness", exampleCapture}, "ahp-tap replay: " + exampleCapture + ": --direction is for plain NDJSON streams", nil},
		{[]string{"demo", "extra"}, `ahp-tap demo: unexpected argument "extra"`, nil},
		{[]string{"example-backend", "extra"}, `ahp-tap example-backend: unexpected argument "extra"`, nil},
		{[]string{"check", "--bogus", stream}, "ahp-tap check: flag provided but not defined: --bogus", nil},
		{[]string{"replay", "--format"}, "ahp-tap replay: flag needs an argument: --format", nil},
		{[]string{"tail", "--level", "loud", logPath}, "ahp-tap tail: --level", nil},
		{[]string{"mock", "backend", "--stdio"}, "ahp-tap mock backend: one CAPTURE expected", nil},
		{[]string{"mock", "harness", "--bogus", "x"}, "ahp-tap mock harness: flag provided but not defined: --bogus", nil},
		{[]string{"stdio", "--audit-queue", "0", "--", "/bin/true"}, "ahp-tap stdio: --audit-queue must be at least 1", nil},
		{[]string{"stdio", "--audit-queue", "many", "--", "/bin/true"}, `ahp-tap stdio: invalid value "many" for --audit-queue: not a whole number`, []string{"parse error"}},
		{[]string{"http", "--upstream", "ftp://x"}, "ahp-tap http: --upstream", nil},
		{[]string{"wrap", "--dir", dir}, "ahp-tap wrap: ", nil},
	}
	for _, c := range cases {
		r := runTapIn(t, dir, c.args...)
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("ahp-tap %q: exit %d, stderr %q; want exit 2 and %q", c.args, r.code, r.stderr, c.want)
		}
		cmd := c.args[0]
		if cmd == "mock" {
			cmd += " " + c.args[1]
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, "ahp-tap "+cmd+": ") {
				t.Errorf("ahp-tap %q: a line without the prefix %q: %q", c.args, "ahp-tap "+cmd+": ", l)
			}
		}
		for _, n := range c.not {
			if strings.Contains(r.stderr, n) {
				t.Errorf("ahp-tap %q: stderr says %q: %q", c.args, n, r.stderr)
			}
		}
		if regexp.MustCompile(`[^-]-bogus`).MatchString(r.stderr) {
			t.Errorf("ahp-tap %q: the flag is not named as typed: %q", c.args, r.stderr)
		}
	}
	// The right inputs are still taken.
	for _, args := range [][]string{
		{"tail", logPath},
		{"check", "--timeout", "5s", stream},
		{"replay", "--direction", "harness", stream},
		{"replay", exampleCapture},
	} {
		if r := runTapIn(t, dir, args...); r.code == 2 {
			t.Errorf("ahp-tap %q: exit 2, %s", args, r.stderr)
		}
	}
}

// TestMockHelpListsFlags: 'mock backend --help' and 'mock harness --help'
// (and 'help mock harness') list their flags (issue 21 items 7 and 13:
// "every flag").
func TestMockHelpListsFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args  []string
		flags []string
	}{
		{[]string{"mock", "backend", "--help"}, []string{"--stdio", "--listen ADDR", "--read-timeout", "--match", "--ignore", "--allow-remote", "--registration FILE", "--fail-on"}},
		{[]string{"mock", "backend", "-h"}, []string{"--stdio"}},
		{[]string{"mock", "harness", "--help"}, []string{"--url URL", "--wait DURATION", "--bearer-env VAR", "--match", "--registration FILE", "--fail-on LEVEL", "--timeout DURATION"}},
		{[]string{"help", "mock", "harness"}, []string{"--url URL"}},
	} {
		r := runTap(t, "", c.args...)
		sub := c.args[1]
		if c.args[0] == "help" {
			sub = c.args[2]
		}
		if r.code != 0 || !strings.Contains(r.stderr, "usage: ahp-tap mock "+sub+" [flags]") {
			t.Errorf("ahp-tap %q: exit %d, stderr %q", c.args, r.code, r.stderr)
		}
		for _, f := range c.flags {
			if !strings.Contains(r.stderr, "\n  "+f) {
				t.Errorf("ahp-tap %q does not list %s:\n%s", c.args, f, r.stderr)
			}
		}
	}
}

// TestTailFollowWaitsForLog: tail -f on a log a tap has not created yet
// waits for it, as tail -F does, and prints its findings once it appears
// (issue 21 item 7). Without -f a missing log is exit 2.
func TestTailFollowWaitsForLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "later.log")
	if r := runTap(t, "", "tail", logPath); r.code != 2 {
		t.Errorf("tail of a missing log without -f: exit %d", r.code)
	}
	cmd := exec.Command(tapBinary, "tail", "-f", logPath)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Once it says it waits, the log is made by a live run.
	if line, _ := bufio.NewReader(stderr).ReadString('\n'); !strings.Contains(line, "ahp-tap tail: "+logPath+" does not exist yet; waiting for it") {
		t.Fatalf("tail -f of a missing log said %q", line)
	}
	go io.Copy(io.Discard, stderr)
	if r := runTap(t, "", "demo", "--log", logPath); r.code != 0 {
		t.Fatalf("demo --log: exit %d %s", r.code, r.stderr)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		if !ok || !strings.Contains(l, "STDIO-1") {
			t.Errorf("tail -f printed %q (open %v); want the demo's first finding", l, ok)
		}
	case <-time.After(time.Minute):
		t.Fatal("tail -f printed nothing of the log made after it started")
	}
}

// TestHTTPConnectionLabel: an HTTP connection is labelled http-conn:N in
// the console line, the log and the capture, never http/N (which reads
// as HTTP/2); a capture with the old labels still replays (issue 21 item
// 11).
func TestHTTPConnectionLabel(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"2025-01-01","effects":[]}}`) // BASE-2
	}))
	defer up.Close()
	dir := t.TempDir()
	logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "s.capture")
	lt := startHTTPTap(t, "--upstream", up.URL, "--console", "--log", logPath, "--capture", capPath)
	addr := lt.waitFor(t, "listening on", "http://")
	for i := 0; i < 2; i++ { // two connections: http-conn:1 and http-conn:2
		req, _ := http.NewRequest("POST", "http://"+addr+"/agent-hooks", strings.NewReader(
			`{"jsonrpc":"2.0","id":"e1","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Close = true
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// SIGTERM: the tap finishes the audit, prints and flushes, and exits.
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	lt.cmd.Wait()
	console := lt.stderrText()
	if !regexp.MustCompile(`ahp-tap ▸ http-conn:1 #\d+ sent by backend: error BASE-2`).MatchString(console) {
		t.Errorf("console lines do not name http-conn:1:\n%s", console)
	}
	for name, text := range map[string]string{"console": console, "log": readText(t, logPath), "capture": readText(t, capPath)} {
		if regexp.MustCompile(`http/\d`).MatchString(text) {
			t.Errorf("the %s names a connection http/N:\n%s", name, text)
		}
		if !strings.Contains(text, "http-conn:1") {
			t.Errorf("the %s does not name http-conn:1:\n%s", name, text)
		}
	}
	// An old capture labels connections http/N: it replays as before.
	old := harTestdata + "/session.capture"
	if !strings.Contains(readText(t, old), `"conn":"http/2"`) {
		t.Fatalf("%s no longer has the old labels", old)
	}
	r := runTap(t, "", "replay", old)
	if r.code == 2 || !regexp.MustCompile(`session.capture \(capture\): [1-9]\d* frames audited`).MatchString(r.stdout) {
		t.Errorf("replay of a capture with http/N labels: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// pidScript is a backend command that appends its process id to file, then
// runs the conforming example backend: how many processes a harness
// started.
func pidScript(file string) []string {
	return []string{"sh", "-c", `echo $$ >> "$0"; exec "$1" example-backend`, file, tapBinary}
}

func countPIDs(t *testing.T, path string) int {
	t.Helper()
	return strings.Count(readText(t, path), "\n")
}

// TestExampleHarnessPerEventAndHTTP: example-harness --lifecycle
// per_event starts one backend per message; --url plays the session to
// example-backend --listen over HTTP (issue 21 item 12).
func TestExampleHarnessPerEventAndHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	steps := len(examples.Session(time.Now()))
	for lifecycle, want := range map[string]int{"per_event": steps, "persistent": 1} {
		pids := filepath.Join(dir, lifecycle+".pids")
		r := runTapIn(t, dir, append([]string{"example-harness", "--lifecycle", lifecycle}, pidScript(pids)...)...)
		if r.code != 0 || strings.Count(r.stderr, "explicit_deny") != 2 || strings.Count(r.stderr, "no_effect") != 2 {
			t.Errorf("example-harness --lifecycle %s: exit %d\n%s", lifecycle, r.code, r.stderr)
		}
		if n := countPIDs(t, pids); n != want {
			t.Errorf("example-harness --lifecycle %s started %d backends, want %d", lifecycle, n, want)
		}
	}

	addr := freePort(t)
	backend := exec.Command(tapBinary, "example-backend", "--listen", addr)
	if err := backend.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { backend.Process.Kill(); backend.Wait() }()
	r := runTap(t, "", "example-harness", "--url", "http://"+addr+"/agent-hooks")
	if r.code != 0 || strings.Count(r.stderr, "explicit_deny") != 2 || strings.Count(r.stderr, "manifest received") != 1 || strings.Contains(r.stderr, "operational_failure") {
		t.Errorf("example-harness --url: exit %d\n%s", r.code, r.stderr)
	}
	backend.Process.Signal(syscall.SIGTERM)
	if err := backend.Wait(); err != nil {
		t.Errorf("example-backend --listen after SIGTERM: %v", err)
	}
	// Nothing listens: the harness says so, exit 2, within its --timeout.
	r = runTap(t, "", "example-harness", "--timeout", "300ms", "--url", "http://"+addr+"/agent-hooks")
	if r.code != 2 || !strings.Contains(r.stderr, "ahp-tap example-harness: nothing accepts connections on "+addr) {
		t.Errorf("example-harness --url with nothing listening: exit %d, %s", r.code, r.stderr)
	}
}

// TestMockHarnessPerEventFromFlags: mock harness --registration --hook
// starts one backend process per message when that hook is per_event, and
// one for the session when it is persistent (docs/mock.md; issue 21 item
// 12).
func TestMockHarnessPerEventFromFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	capPath := filepath.Join(dir, "session.capture")
	if r := runTapIn(t, dir, "example-harness", "--", tapBinary, "stdio", "--capture", capPath, "--", tapBinary, "example-backend"); r.code != 0 {
		t.Fatalf("recording: exit %d %s", r.code, r.stderr)
	}
	steps := len(examples.Session(time.Now()))
	for hook, want := range map[string]int{"com.example.review-per-event": steps, "com.example.review": 1} {
		pids := filepath.Join(dir, hook+".pids")
		args := append([]string{"mock", "harness", "--registration", "../../examples/hooks.json", "--hook", hook, capPath, "--"}, pidScript(pids)...)
		r := runTap(t, "", args...)
		if r.code != 0 {
			t.Errorf("mock harness --hook %s: exit %d\n%s", hook, r.code, r.stderr)
		}
		if n := countPIDs(t, pids); n != want {
			t.Errorf("mock harness --hook %s started %d backends, want %d", hook, n, want)
		}
	}
}

// TestDocDriftsIssue21: what issue 21 item 13 found wrong in the docs
// stays fixed.
func TestDocDriftsIssue21(t *testing.T) {
	t.Parallel()
	readme := readText(t, "../../README.md")
	for _, bad := range []string{"with nothing on screen", "takes up to a minute", "— every flag."} {
		if strings.Contains(readme, bad) {
			t.Errorf("README still says %q", bad)
		}
	}
	exit3 := regexp.MustCompile(`(?m)^\| 3 \| `)
	for _, page := range []string{"../../README.md", "../../docs/ci.md"} {
		if !exit3.MatchString(readText(t, page)) {
			t.Errorf("%s: the exit-code table has no row for 3", page)
		}
	}
	if strings.Contains(readText(t, "../../docs/capture-format.md"), "file whose first line is not is treated by `replay` as plain NDJSON") {
		t.Error("capture-format.md still says every non-capture is plain NDJSON")
	}
	// docs/stdio.md counts the example harness's messages as it plays them.
	counts := map[string]int{}
	for _, st := range examples.Session(time.Now()) {
		counts[st.Method]++
	}
	words := []string{"zero", "one", "two", "three", "four", "five", "six"}
	stdioDoc := strings.Join(strings.Fields(readText(t, "../../docs/stdio.md")), " ")
	for _, want := range []string{
		fmt.Sprintf("%s `tool.before` intercepts", words[counts["hooks/intercept"]]),
		fmt.Sprintf("and %s observations", words[counts["hooks/observe"]]),
	} {
		if !strings.Contains(stdioDoc, want) {
			t.Errorf("docs/stdio.md does not say %q of the example harness", want)
		}
	}
	// demo -h names one default for --mode, on the flag's own line.
	r := runTap(t, "", "demo", "-h")
	if n := strings.Count(r.stderr, "(default"); n != 1 || !strings.Contains(r.stderr, "example-backend MODE to audit (default demo):") {
		t.Errorf("demo -h names %d defaults:\n%s", n, r.stderr)
	}
	r = runTap(t, "", "example-backend", "-h")
	if n := strings.Count(r.stderr, "(default conforming)"); n != 1 || strings.Contains(r.stderr, "(default)") {
		t.Errorf("example-backend -h:\n%s", r.stderr)
	}
}
