package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/e2e"
	"github.com/ahp-tap/ahp-tap/rules"
)

// tapCmd is `ahp-tap stdio FLAGS -- <helper NAME ARGS>` with the test
// binary built without the race detector (childBinary) playing both parts.
func tapCmd(flags []string, helper string, args ...string) *exec.Cmd {
	return tapCmdFrom(childBinary, flags, helper, args...)
}

// raceTapCmd is tapCmd with the tap race-built under -race: this test
// binary itself. The tests that use it are the end-to-end race check of
// the tap's forwarding and audit goroutines (the packages run under -race
// in their own tests, with fakes around them): TestStdioForwardsSIGTERM
// (signal forwarding while both directions are copied),
// TestStdioUnwritableLogDoesNotDisturbTraffic (forwarding while the log
// writer fails), TestStdioCaptureReplaysToTheSameFindings (per_event
// taps: forwarding, the audit process, the capture and the log) and
// TestStdioTruncatedRequestNoFalseCorr2 (persistent: the audit of lines cut
// at --max-audit-line). A race-built tap costs several times the CPU of
// the others, so the rest use tapCmd.
func raceTapCmd(flags []string, helper string, args ...string) *exec.Cmd {
	return tapCmdFrom(os.Args[0], flags, helper, args...)
}

// tapCmdFrom is tapCmd with bin as the tap.
func tapCmdFrom(bin string, flags []string, helper string, args ...string) *exec.Cmd {
	argv := append([]string{"stdio"}, flags...)
	if p, err := exec.LookPath("cat"); err == nil && helper == "cat" && len(args) == 0 {
		// The system's cat behaves as the helper does and starts at once,
		// sooner than the test binary.
		argv = append(argv, "--", p)
	} else {
		argv = append(argv, "--", childBinary, "helper", helper)
		argv = append(argv, args...)
	}
	cmd := exec.Command(bin, argv...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	return cmd
}

func waitStatus(err error) (syscall.WaitStatus, bool) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws, ok := ee.Sys().(syscall.WaitStatus)
		return ws, ok
	}
	return 0, err == nil
}

func TestStdioExitStatusMirrored(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 1, 3, 100} {
		cmd := tapCmd(nil, "exit", strconv.Itoa(code))
		err := cmd.Run()
		if got := cmd.ProcessState.ExitCode(); got != code {
			t.Errorf("backend exit %d: ahp-tap exit = %d (%v)", code, got, err)
		}
	}
}

func TestStdioDiesOfTheBackendsSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGSEGV, syscall.SIGABRT, syscall.SIGINT} {
		cmd := tapCmd(nil, "signal", strconv.Itoa(int(sig)))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		ws, _ := waitStatus(err)
		if !ws.Signaled() || ws.Signal() != sig {
			t.Errorf("backend killed by %v: ahp-tap status = %v (exit %d, signaled %v %v); stderr %q", sig, err, ws.ExitStatus(), ws.Signaled(), ws.Signal(), stderr.String())
		}
	}
}

func TestStdioForwardsSIGTERM(t *testing.T) {
	t.Parallel()
	cmd := raceTapCmd(nil, "trap")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stdin = strings.NewReader("")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, _ := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("backend said %q", line)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	line, _ := out.ReadString('\n')
	if line != "got terminated\n" {
		t.Errorf("after SIGTERM to ahp-tap the backend said %q, want %q", line, "got terminated\n")
	}
	cmd.Wait()
	if got := cmd.ProcessState.ExitCode(); got != 7 {
		t.Errorf("ahp-tap exit = %d, want the backend's 7", got)
	}
}

// TestStdioKilledTapLeavesNoBackend kills ahp-tap with SIGKILL (no chance
// to clean up): the kernel must take the backend down with it.
func TestStdioKilledTapLeavesNoBackend(t *testing.T) {
	t.Parallel()
	cmd := tapCmd(nil, "sleeper")
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("sleeper said %q", line)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// Pdeathsig delivers SIGKILL when ahp-tap dies; wait for it to land
	// (the test's own deadline bounds this loop).
	for i := 0; running(pid); i++ {
		if i == 1000 {
			t.Fatalf("backend %d still runs after ahp-tap was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running reports whether pid is a live process (not a zombie).
func running(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func TestStdioUnwritableLogDoesNotDisturbTraffic(t *testing.T) {
	t.Parallel()
	in := []byte("{\"jsonrpc\":\"2.0\",\"method\":\"hooks/observe\",\"params\":{}}\nnot json\n")
	for _, logPath := range []string{"/dev/full", filepath.Join(t.TempDir(), "missing-dir", "log.jsonl"), "/proc/version"} {
		cmd := raceTapCmd([]string{"--log", logPath, "--capture", logPath}, "cat")
		cmd.Stdin = bytes.NewReader(in)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil || !bytes.Equal(stdout.Bytes(), in) {
			t.Errorf("--log %s: err %v, forwarded %q, want %q", logPath, err, stdout.Bytes(), in)
		}
		// Reported once each for the log and the capture, nothing more.
		if n := strings.Count(stderr.String(), "ahp-tap:"); n < 1 || n > 2 {
			t.Errorf("--log %s: stderr = %q, want the failure reported once for the log (and once for the capture)", logPath, stderr.String())
		}
	}
}

// TestStdioLargeLinesBoundedMemory sends a 50 MB line each way and checks
// the bytes arrive intact while ahp-tap's peak memory stays far below the
// size of the lines it forwarded.
func TestStdioLargeLinesBoundedMemory(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	if testing.Short() {
		t.Skip("50 MB each way")
	}
	line := bytes.Repeat([]byte(`{"k":"0123456789abcdef"},`), 2<<20) // 50 MiB
	line[len(line)-1] = '\n'
	cmd := tapCmd([]string{"--summary=false"}, "cat")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd) // not ru_maxrss: a vforked child inherits the test process's high-water mark
	go func() {
		stdin.Write(line)
		stdin.Close()
	}()
	h := sha256.New()
	n, _ := io.Copy(h, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(line)
	if n != int64(len(line)) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("forwarded %d bytes (sha256 %x), want %d (%x)", n, h.Sum(nil), len(line), want)
	}
	maxRSS := int64(rss(cmd) * (1 << 20))
	t.Logf("peak RSS of ahp-tap forwarding a %d MiB line each way: %.1f MiB", len(line)>>20, float64(maxRSS)/(1<<20))
	// Both lines (100 MiB) must never be held; the audit copy is capped at
	// 16 MiB per line.
	if maxRSS > 96<<20 && !raceEnabled {
		t.Errorf("peak RSS = %d MiB, want < 96 MiB (the lines are 2 × %d MiB)", maxRSS>>20, len(line)>>20)
	}
}

// logRecords reads a violation log as comparable lines (without the time
// the record was written).
func logRecords(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		delete(m, "time")
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// TestStdioCaptureReplaysToTheSameFindings runs a short session with a
// banner, a pretty-printed line and a CRLF through the tap with a capture,
// then replays the capture: the findings must be the live ones.
func TestStdioCaptureReplaysToTheSameFindings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live, replayed, capPath := filepath.Join(dir, "live.jsonl"), filepath.Join(dir, "replay.jsonl"), filepath.Join(dir, "cap.jsonl")
	answer := `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`
	in := `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"}},"capabilities":{"effects":["deny"]}}}` + "\r\n{\n"
	cmd := raceTapCmd([]string{"--log", live, "--capture", capPath, "--lifecycle", "per_event", "--timeout", "5s"}, "answer", answer)
	cmd.Stdin = strings.NewReader(in)
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("ahp-tap: %v (%s)", err, out)
	}
	if fi, err := os.Stat(capPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("capture mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	rc := exec.Command(childBinary, "replay", "--log", replayed, "--fail-on", "never", capPath)
	rc.Env = append(os.Environ(), mainEnv+"=1")
	if out, err := rc.CombinedOutput(); err != nil {
		t.Fatalf("replay: %v (%s)", err, out)
	}
	l, r := logRecords(t, live), logRecords(t, replayed)
	if len(l) == 0 {
		t.Fatalf("the live run found nothing; the session has deliberate faults")
	}
	if strings.Join(l, "\n") != strings.Join(r, "\n") {
		t.Errorf("replayed findings differ from live ones:\nlive:\n%s\nreplay:\n%s", strings.Join(l, "\n"), strings.Join(r, "\n"))
	}
}

// TestStdioPerEventProcessesShareStateAndCapture runs two per_event taps at
// once, as a harness does for two events, with one --state and one capture.
func TestStdioPerEventProcessesShareStateAndCapture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state, capPath := filepath.Join(dir, "state"), filepath.Join(dir, "cap.jsonl")
	msg := func(id, cmdText string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id + `","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"},"tool":{"name":"Bash","input":{"command":"` + cmdText + `"}}},"capabilities":{"effects":["deny"]}}}` + "\n"
	}
	answer := `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`
	var cmds []*exec.Cmd
	for _, in := range []string{msg("e1", "ls"), msg("e1", "rm -rf /")} {
		cmd := tapCmd([]string{"--lifecycle", "per_event", "--state", state, "--capture", capPath}, "answer", answer, "once")
		cmd.Stdin = strings.NewReader(in)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(state, "event-*.json"))
	if len(files) != 1 {
		t.Errorf("state files = %v, want one record for event e1", files)
	}
	data, _ := os.ReadFile(capPath)
	if n := bytes.Count(data, []byte(`"type":"header"`)); n != 2 {
		t.Errorf("capture has %d headers, want one per process (2)", n)
	}
	if n := bytes.Count(data, []byte(`"type":"frame"`)); n != 4 {
		t.Errorf("capture has %d frames, want 4", n)
	}
	for i, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if !json.Valid(l) {
			t.Errorf("capture line %d is not whole JSON (interleaved appends?): %.80q", i+1, l)
		}
	}
}

// TestStdioPerEventRetryAcrossProcesses runs two per_event taps one after
// the other, as a harness does for an event and its retry, sharing --state:
// the retry carries changed content, and the second process must say so
// (BASE-6) although it never saw the first delivery itself.
func TestStdioPerEventRetryAcrossProcesses(t *testing.T) {
	t.Parallel()
	if !hasRule("BASE-6/") {
		t.Skip("no BASE-6 rule in this build")
	}
	dir := t.TempDir()
	state, log := filepath.Join(dir, "state"), filepath.Join(dir, "findings.jsonl")
	msg := func(command string) string {
		return `{"jsonrpc":"2.0","id":"evt_7","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"evt_7","source":"urn:example:h","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"},"session":{"id":"s1"},"tool":{"name":"Bash","kind":"shell","origin":"native","input":{"command":"` + command + `"}},"call":{"id":"c7"},"path":"native"},"capabilities":{"effects":["deny"]}}}` + "\n"
	}
	answer := `{"jsonrpc":"2.0","id":"evt_7","result":{"protocolVersion":"draft","effects":[{"type":"deny","reason":"no"}]}}`
	for i, in := range []string{msg("ls"), msg("rm -rf /")} {
		cmd := tapCmd([]string{"--lifecycle", "per_event", "--state", state, "--log", log}, "answer", answer, "once")
		cmd.Stdin = strings.NewReader(in)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("process %d: %v\n%s", i+1, err, out)
		}
	}
	data, _ := os.ReadFile(log)
	if !strings.Contains(string(data), `"check":"BASE-6"`) {
		t.Errorf("no BASE-6 finding for the changed retry across processes; log:\n%s", data)
	}
}

// hasRule reports whether the default rule set has a rule whose ID starts
// with prefix (families arrive from other branches).
func hasRule(prefix string) bool {
	for _, r := range rules.Default(rules.Options{}) {
		if strings.HasPrefix(r.Info().ID, prefix) {
			return true
		}
	}
	return false
}

func TestStdioUsageErrors(t *testing.T) {
	t.Parallel()
	m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}
	for _, args := range [][]string{{"stdio"}, {"stdio", "--lifecycle", "sometimes", "--", "cat"}, {"stdio", "--hook", "x", "--", "cat"}, {"stdio", "--audit-priority", "high", "--", "cat"}} {
		err := m.Run(context.Background(), args)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("Run(%q) = %v, want exit 2", args, err)
		}
	}
}
