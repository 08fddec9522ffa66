package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
	"github.com/ahp-tap/ahp-tap/stdiotap"
)

// perEventScript is a per_event backend (one request, one answer, exit)
// with faults chosen by the request id's last digit: 0 answers with a
// wrong id (CORR-2), 3 prints a banner first (STDIO-1), 7 exits 3 without
// an answer (STDIO-2); the others answer correctly.
const perEventScript = `#!/bin/sh
IFS= read -r line
id=${line#*\"id\":\"}
id=${id%%\"*}
ok="{\"jsonrpc\":\"2.0\",\"id\":\"$id\",\"result\":{\"protocolVersion\":\"draft\",\"effects\":[]}}"
case "$id" in
*0) echo "{\"jsonrpc\":\"2.0\",\"id\":\"x$id\",\"result\":{\"protocolVersion\":\"draft\",\"effects\":[]}}" ;;
*3) echo "policy backend v1 ready"; echo "$ok" ;;
*7) exit 3 ;;
*) echo "$ok" ;;
esac
`

func writeScript(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "backend.sh")
	if err := os.WriteFile(p, []byte(perEventScript), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// runEvent runs one per_event event through the built ahp-tap: the
// request on stdin, the tap's stderr returned.
func runEvent(t *testing.T, req string, flags []string, backend string) string {
	t.Helper()
	cmd := exec.Command(tapBinary, append(append([]string{"stdio"}, flags...), "--", backend)...)
	cmd.Stdin = strings.NewReader(req + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second
	_ = cmd.Run() // the backend's status (3 for the faulty ones)
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() < 0 {
		t.Fatalf("ahp-tap %v: %v\n%s", flags, cmd.ProcessState, stderr.String())
	}
	return stderr.String()
}

// sharedServers returns the pids of shared audit processes of state dir.
func sharedServers(state string) []int {
	return processesRunning(func(cl []string) bool {
		return len(cl) > 1 && cl[1] == stdiotap.ServerCommand && slices.Contains(cl, state)
	})
}

// waitNoServer waits until no shared audit process of state runs: it
// exits auditlink.Idle after its last link, each link finished within
// stdiotap.Bound; the bound here only stops a broken server from hanging the
// test.
func waitNoServer(t *testing.T, state string) {
	t.Helper()
	limit := auditlink.Idle + stdiotap.Bound + 30*time.Second
	deadline := time.Now().Add(limit)
	for len(sharedServers(state)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("shared audit process %v of %s still runs after %v", sharedServers(state), state, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	connRE = regexp.MustCompile(`stdio:\d+`)
	timeRE = regexp.MustCompile(`(\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\d(\.\d+)?Z`)
)

// normalFindings reads a violation log as sorted findings without what
// differs from run to run (times, process ids).
func normalFindings(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		delete(f, "time")
		delete(f, "frameTime")
		delete(f, "conn")
		b, _ := json.Marshal(f)
		out = append(out, timeRE.ReplaceAllString(connRE.ReplaceAllString(string(b), "stdio:PID"), "TIME"))
	}
	slices.Sort(out)
	return out
}

// TestStdioSharedAuditMatchesPerProcess runs 100 per_event events, some
// faulty, through taps that share one audit process per --state directory
// and through taps with an audit process each (--shared-audit=false): the
// violation logs hold the same findings, and the shared run started fewer
// audit servers than it had events.
func TestStdioSharedAuditMatchesPerProcess(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	dir := t.TempDir()
	backend := writeScript(t, dir)
	const events = 100
	reqs := make([]string, events)
	for i := range reqs {
		id, cmd := fmt.Sprintf("e%d", i), "ls"
		if i >= 90 { // a retry of event i-90 with another command: BASE-6 across processes
			id, cmd = fmt.Sprintf("e%d", i-90), "rm -rf /"
		}
		reqs[i] = intercept(id, cmd)
	}
	run := func(name string, extra ...string) (logPath, state string, notices []string) {
		state = filepath.Join(dir, name+"-state")
		logPath = filepath.Join(dir, name+".jsonl")
		flags := append([]string{"--lifecycle", "per_event", "--state", state, "--log", logPath,
			"--capture", filepath.Join(dir, name+"-cap.jsonl"), "--summary=false"}, extra...)
		for _, req := range reqs {
			if s := runEvent(t, req, flags, backend); s != "" {
				notices = append(notices, s)
			}
		}
		return logPath, state, notices
	}
	var wg sync.WaitGroup
	var sharedLog, sharedState, perLog string
	var sharedNotices, perNotices []string
	wg.Add(2)
	go func() { defer wg.Done(); sharedLog, sharedState, sharedNotices = run("shared") }()
	go func() { defer wg.Done(); perLog, _, perNotices = run("per", "--shared-audit=false") }()
	wg.Wait()
	if len(sharedNotices)+len(perNotices) > 0 {
		t.Logf("notices (shared): %q\nnotices (per-process): %q", sharedNotices, perNotices)
	}
	shared, per := normalFindings(t, sharedLog), normalFindings(t, perLog)
	if len(per) < events/5 {
		t.Fatalf("the per-process run found only %d findings; the faulty backend should give more", len(per))
	}
	if !slices.Equal(shared, per) {
		t.Errorf("shared audit: %d findings, per-process: %d; they differ:\nshared only: %q\nper-process only: %q",
			len(shared), len(per), multisetMinus(shared, per), multisetMinus(per, shared))
	}
	for _, check := range []string{`"check":"CORR-2"`, `"check":"STDIO-1"`, `"check":"STDIO-2"`, `"check":"BASE-6"`} {
		if !slices.ContainsFunc(shared, func(s string) bool { return strings.Contains(s, check) }) {
			t.Errorf("no %s finding in the shared run", check)
		}
	}
	errFiles, _ := filepath.Glob(filepath.Join(sharedState, "audit-*.err"))
	starts := 0
	for _, f := range errFiles {
		b, _ := os.ReadFile(f)
		starts += strings.Count(string(b), " started for ")
	}
	if starts == 0 || starts >= events {
		t.Errorf("%d shared audit processes started for %d events (error files %v)", starts, events, errFiles)
	}
	waitNoServer(t, sharedState)
}

// multisetMinus lists the lines of a not in b (as multisets).
func multisetMinus(a, b []string) []string {
	left := slices.Clone(b)
	var out []string
	for _, s := range a {
		if i := slices.Index(left, s); i >= 0 {
			left = slices.Delete(left, i, i+1)
		} else {
			out = append(out, s)
		}
	}
	return out
}

// TestStdioSharedAuditSurvivesSIGKILL SIGKILLs a per_event tap's process
// group (as the AHP SDK does after a failed exchange) once the harness has
// read a wrong-id answer: the shared audit process must still write that
// event's CORR-2 to the log and a `killed` note to the capture, and exit
// once idle, leaving no process behind.
func TestStdioSharedAuditSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "c.jsonl")
	bad := `{"jsonrpc":"2.0","id":"e2","result":{"protocolVersion":"draft","effects":[]}}`
	cmd := exec.Command(tapBinary, "stdio", "--lifecycle", "per_event", "--state", state, "--log", logPath,
		"--capture", capPath, "--summary=false", "--", childBinary, "helper", "reply", "0s", bad)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as the SDK starts a backend
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if _, err := stdin.Write([]byte(intercept("e1", "ls") + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if len(sharedServers(state)) != 1 {
		t.Errorf("shared audit processes of %s: %v, want one", state, sharedServers(state))
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	cmd.Wait()
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the forwarding process ended %v, want killed by SIGKILL", cmd.ProcessState)
	}
	waitNoServer(t, state) // and so the link is finished
	if strings.Contains(stderr.String(), "not used") {
		t.Errorf("the shared audit process was not used: %s", stderr.String())
	}
	logData, _ := os.ReadFile(logPath)
	for _, w := range []string{`"check":"CORR-2"`, `matches no request`, fmt.Sprintf(`"conn":"stdio:%d"`, pid)} {
		if !strings.Contains(string(logData), w) {
			t.Errorf("log lacks %s:\n%s", w, logData)
		}
	}
	c, _ := os.ReadFile(capPath)
	lines := strings.Split(strings.TrimSpace(string(c)), "\n")
	if !strings.Contains(string(c), `"kind":"killed"`) || !strings.Contains(lines[len(lines)-1], `"kind":"end"`) {
		t.Errorf("capture lacks the killed note or the end record:\n%s", c)
	}
	if strings.Count(string(c), `"type":"frame"`) < 2 {
		t.Errorf("capture lacks the exchange's frames:\n%s", c)
	}
}

// TestStdioSharedAuditRefusesPlantedLinks plants symbolic links at the
// rendezvous's lock and socket paths: the tap follows neither (the link's
// target is untouched, a listener behind it gets no connection), says so,
// and audits the event in a process of its own. A stale socket (nobody
// listening) is replaced by a new shared audit process.
func TestStdioSharedAuditRefusesPlantedLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	backend := writeScript(t, dir)
	state := filepath.Join(dir, "state")
	logPath := filepath.Join(dir, "v.log")
	flags := []string{"--lifecycle", "per_event", "--state", state, "--log", logPath, "--summary=false"}
	event := func() string { return runEvent(t, intercept("e10", "ls"), flags, backend) } // a wrong-id answer: CORR-2
	corr2 := func() int {
		b, _ := os.ReadFile(logPath)
		return strings.Count(string(b), `"check":"CORR-2"`)
	}
	if s := event(); s != "" {
		t.Fatalf("first event: %s", s)
	}
	locks, _ := filepath.Glob(filepath.Join(state, "audit-*.lock"))
	if len(locks) != 1 || corr2() == 0 {
		t.Fatalf("after one event: locks %v, %d CORR-2", locks, corr2())
	}
	p := auditlink.PathsFor(state, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(locks[0]), "audit-"), ".lock"))
	waitNoServer(t, state)
	if _, err := os.Lstat(p.Sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the idle server left its socket: %v", err)
	}

	// A link at the lock's path.
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep\n"), 0o644)
	os.Remove(p.Lock)
	if err := os.Symlink(target, p.Lock); err != nil {
		t.Fatal(err)
	}
	n := corr2()
	if s := event(); !strings.Contains(s, "symbolic link") {
		t.Errorf("a link at the lock: stderr %q, want the refusal", s)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("the lock link's target changed: %q", b)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o644 {
		t.Errorf("the lock link's target's mode changed to %v", st.Mode())
	}
	if corr2() <= n {
		t.Errorf("the event audited in a process of its own logged no CORR-2")
	}
	os.Remove(p.Lock)

	// A link at the socket's path, to a listener of someone else's.
	other := filepath.Join(dir, "other.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: other, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Symlink(other, p.Sock); err != nil {
		t.Fatal(err)
	}
	n = corr2()
	if s := event(); !strings.Contains(s, "symbolic link") {
		t.Errorf("a link at the socket: stderr %q, want the refusal", s)
	}
	if corr2() <= n {
		t.Errorf("the event audited in a process of its own logged no CORR-2")
	}
	// The tap has exited: a connection it made would be queued now.
	f, _ := ln.File()
	defer f.Close()
	lfd := int(f.Fd()) // Fd makes it blocking: once, then non-blocking
	syscall.SetNonblock(lfd, true)
	if nfd, _, err := syscall.Accept(lfd); err == nil {
		syscall.Close(nfd)
		t.Errorf("the tap connected through the planted link")
	} else if !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("accept: %v", err)
	}
	if st, err := os.Lstat(p.Sock); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the planted link was removed or replaced: %v", err)
	}
	os.Remove(p.Sock)

	// A stale socket: its server was killed.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.Sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	n = corr2()
	if s := event(); s != "" {
		t.Errorf("a stale socket: stderr %q, want none (a new server)", s)
	}
	if corr2() <= n {
		t.Errorf("no CORR-2 logged behind a stale socket")
	}
	b, _ := os.ReadFile(p.Err)
	if strings.Count(string(b), " started for ") != 2 {
		t.Errorf("error file after a stale socket: %q, want a second server started", b)
	}
	waitNoServer(t, state)
}

// TestStdioSharedAuditConcurrentEvents runs 40 per_event events eight at a
// time (a harness that dispatches in parallel) through the shared audit
// process: every event's link is its own session, so the findings equal
// those of the same events run one by one with an audit process each.
func TestStdioSharedAuditConcurrentEvents(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	dir := t.TempDir()
	backend := writeScript(t, dir)
	const events, parallel = 40, 8
	flagsFor := func(name string) []string {
		return []string{"--lifecycle", "per_event", "--state", filepath.Join(dir, name+"-state"),
			"--log", filepath.Join(dir, name+".jsonl"), "--capture", filepath.Join(dir, name+"-cap.jsonl"), "--summary=false"}
	}
	shared, per := flagsFor("shared"), append(flagsFor("per"), "--shared-audit=false")
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if s := runEvent(t, intercept(fmt.Sprintf("e%d", i), "ls"), shared, backend); s != "" {
				t.Logf("event %d: %s", i, s)
			}
		}()
	}
	for i := range events {
		if s := runEvent(t, intercept(fmt.Sprintf("e%d", i), "ls"), per, backend); s != "" {
			t.Logf("event %d (per-process): %s", i, s)
		}
	}
	wg.Wait()
	a, b := normalFindings(t, filepath.Join(dir, "shared.jsonl")), normalFindings(t, filepath.Join(dir, "per.jsonl"))
	if len(b) == 0 || !slices.Equal(a, b) {
		t.Errorf("concurrent shared audit: %d findings, one by one per process: %d:\nshared only: %q\nper-process only: %q",
			len(a), len(b), multisetMinus(a, b), multisetMinus(b, a))
	}
	capData, _ := os.ReadFile(filepath.Join(dir, "shared-cap.jsonl"))
	if h, e := strings.Count(string(capData), `"type":"header"`), strings.Count(string(capData), `"kind":"end"`); h != events || e != events {
		t.Errorf("shared capture: %d headers and %d end records, want %d of each", h, e, events)
	}
	waitNoServer(t, filepath.Join(dir, "shared-state"))
}

// TestStdioSharedAuditKeyedByConfiguration: taps of one --state directory
// with different audit settings (here --timeout) never share an audit
// process; taps with the same ones do.
func TestStdioSharedAuditKeyedByConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	backend := writeScript(t, dir)
	state := filepath.Join(dir, "state")
	for i, timeout := range []string{"1s", "2s", "1s"} {
		flags := []string{"--lifecycle", "per_event", "--state", state, "--log", filepath.Join(dir, "v.log"), "--summary=false", "--timeout", timeout}
		if s := runEvent(t, intercept(fmt.Sprintf("e%d", i+1), "ls"), flags, backend); s != "" {
			t.Errorf("event %d: %s", i, s)
		}
	}
	locks, _ := filepath.Glob(filepath.Join(state, "audit-*.lock"))
	if len(locks) != 2 {
		t.Errorf("rendezvous for two configurations: %v, want two", locks)
	}
	waitNoServer(t, state)
}

// The error file gains a line per server start for as long as DIR is used;
// past auditlink.MaxErrFile the next start begins it afresh.
func TestStdioSharedAuditErrorFileBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	backend := writeScript(t, dir)
	state := filepath.Join(dir, "state")
	flags := []string{"--lifecycle", "per_event", "--state", state, "--log", filepath.Join(dir, "v.log"), "--summary=false"}
	runEvent(t, intercept("e1", "ls"), flags, backend)
	waitNoServer(t, state)
	errFiles, _ := filepath.Glob(filepath.Join(state, "audit-*.err"))
	if len(errFiles) != 1 {
		t.Fatalf("error files %v, want one", errFiles)
	}
	big := strings.Repeat("ahp-tap: an old line\n", auditlink.MaxErrFile/20+1)
	if err := os.WriteFile(errFiles[0], []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	runEvent(t, intercept("e2", "ls"), flags, backend)
	waitNoServer(t, state)
	fi, err := os.Stat(errFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > auditlink.MaxErrFile || fi.Size() == 0 {
		t.Errorf("error file is %d bytes after a start past the bound, want a fresh file (0 < size <= %d)", fi.Size(), auditlink.MaxErrFile)
	}
}
