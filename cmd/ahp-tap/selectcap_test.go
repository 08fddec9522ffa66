package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// selFinding is what a replayed finding says, less what differs between
// runs.
type selFound struct {
	Check, Rule, Level, Pointer, Direction, RPCID, Conn, EventType string
	Time                                                           string `json:"frameTime"`
}

func (f selFound) key() string {
	return strings.Join([]string{f.Check, f.Rule, f.Level, f.Pointer, f.Direction, f.RPCID, f.Conn}, " ")
}

// selReplayFindings replays capture and returns its findings.
func selReplayFindings(t *testing.T, capture string) []selFound {
	t.Helper()
	r := runTap(t, "", "replay", "--fail-on", "never", "--format", "json", capture)
	if r.code != 0 {
		t.Fatalf("replay %s: exit %d\n%s", capture, r.code, r.stderr)
	}
	var doc struct{ Findings []selFound }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("replay --format json: %v\n%s", err, r.stdout)
	}
	return doc.Findings
}

// captureExchanges lists the conn and JSON-RPC id of the requests a capture
// holds, and counts its headers.
func captureExchanges(t *testing.T, capture string) (ids map[string]bool, headers int) {
	times, headers := captureRequests(t, capture)
	ids = map[string]bool{}
	for k := range times {
		ids[k] = true
	}
	return ids, headers
}

// captureRequests maps the conn and JSON-RPC id of each request a capture
// holds to its time, and counts the headers.
func captureRequests(t *testing.T, capture string) (times map[string]time.Time, headers int) {
	t.Helper()
	data, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	times = map[string]time.Time{}
	for line := range strings.Lines(string(data)) {
		var rec struct {
			Type, Conn, Raw string
			Time            time.Time
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%s: %v", capture, err)
		}
		if rec.Type == "header" {
			headers++
		}
		var msg struct {
			ID     json.RawMessage
			Method string
		}
		if rec.Type == "frame" && json.Unmarshal([]byte(rec.Raw), &msg) == nil && msg.ID != nil && msg.Method != "" {
			times[rec.Conn+" "+string(msg.ID)] = rec.Time
		}
	}
	return times, headers
}

// checkSelection cuts capture with sel, replays the cut and compares: the
// findings on the kept exchanges are those of the whole capture on them;
// want says which finding of the whole must be kept (and the cut must be
// smaller than the whole).
func checkSelection(t *testing.T, capture string, all []selFound, fewer bool, want func(selFound) bool, sel ...string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cut.capture")
	args := []string{"replay", "--fail-on", "never", "--format", "json"}
	for _, s := range sel {
		args = append(args, "--select", s)
	}
	r := runTap(t, "", append(args, "--write-capture", out, capture)...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d\n%s", sel, r.code, r.stderr)
	}
	if fi, err := os.Lstat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v: the written capture: %v, want mode 0600", sel, err)
	}
	kept, _ := captureExchanges(t, out)
	whole, _ := captureExchanges(t, capture)
	if len(kept) == 0 || (fewer && len(kept) >= len(whole)) {
		t.Errorf("%v: kept %d of %d exchanges, want some and fewer", sel, len(kept), len(whole))
	}
	var wantKeys, gotKeys []string
	for _, f := range all {
		if f.RPCID != "" && kept[f.Conn+" "+f.RPCID] {
			wantKeys = append(wantKeys, f.key())
		}
		if want(f) && !kept[f.Conn+" "+f.RPCID] {
			t.Errorf("%v: the exchange of %s %s was not kept", sel, f.Check, f.RPCID)
		}
	}
	for _, f := range selReplayFindings(t, out) {
		if f.RPCID != "" {
			gotKeys = append(gotKeys, f.key())
		}
	}
	slices.Sort(wantKeys)
	slices.Sort(gotKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("%v: the cut replays to\n%v\nthe whole has on the kept exchanges\n%v", sel, gotKeys, wantKeys)
	}
}

// selectEach cuts a capture by each key of the --select syntax.
func selectEach(t *testing.T, capture string) {
	all := selReplayFindings(t, capture)
	var target selFound // a finding on a tool.before intercept of the demo
	for _, f := range all {
		if f.RPCID != "" && (f.Check == "BASE-9" || f.Check == "BASE-2") {
			target = f
			break
		}
	}
	if target.Check == "" {
		t.Fatalf("%s: no finding on an event's exchange; the backend has deliberate faults: %v", capture, all)
	}
	is := func(f selFound) bool {
		return f.Check == target.Check && f.RPCID == target.RPCID && f.Conn == target.Conn
	}
	none := func(selFound) bool { return false }
	checkSelection(t, capture, all, true, func(f selFound) bool { return f.Check == target.Check }, "check="+target.Check)
	checkSelection(t, capture, all, true, is, "id="+strings.Trim(target.RPCID, `"`)+",conn="+target.Conn)
	times, _ := captureRequests(t, capture)
	at := times[target.Conn+" "+target.RPCID]
	checkSelection(t, capture, all, true, is, "event=tool.before,from="+at.Format(time.RFC3339Nano)+",to="+at.Add(time.Nanosecond).Format(time.RFC3339Nano), "id=none")
	checkSelection(t, capture, all, false, none, "event=tool.before")
}

// TestReplaySelectStdioPersistent: a live persistent stdio session of the
// built binary, cut by each key.
func TestReplaySelectStdioPersistent(t *testing.T) {
	t.Parallel()
	capture, _ := recordSession(t, "demo")
	selectEach(t, capture)
}

// TestReplaySelectStdioPerEvent: one stdio process per event appending to
// one capture (a segment each).
func TestReplaySelectStdioPerEvent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	capture := filepath.Join(dir, "per_event.capture")
	cmd := exec.Command(tapBinary, "example-harness", "--lifecycle", "per_event", "--",
		tapBinary, "stdio", "--lifecycle", "per_event", "--capture", capture, "--", tapBinary, "example-backend", "--mode", "demo")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("recording: %v\n%s", err, out)
	}
	if _, h := captureExchanges(t, capture); h < 3 {
		t.Fatalf("per_event capture has %d segments, want one per event", h)
	}
	selectEach(t, capture)
}

// TestReplaySelectHTTP: a live HTTP tap between the example harness and
// the example backend.
func TestReplaySelectHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := freePort(t)
	backend := exec.Command(tapBinary, "example-backend", "--mode", "demo", "--listen", addr)
	if err := backend.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { backend.Process.Kill(); backend.Wait() }()
	capture := filepath.Join(dir, "http.capture")
	lt := startHTTPTap(t, "--upstream", "http://"+addr+"/agent-hooks", "--capture", capture)
	tapAddr := lt.waitFor(t, "listening on", "http://")
	if r := runTap(t, "", "example-harness", "--url", "http://"+tapAddr+"/agent-hooks"); r.code != 0 {
		t.Fatalf("example-harness through the HTTP tap: exit %d\n%s", r.code, r.stderr)
	}
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	lt.cmd.Wait()
	selectEach(t, capture)
}

// TestReplaySelectRefused: a bad expression, a missing half, an output that
// is the input: exit 2 with one line, and the input untouched.
func TestReplaySelectRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "cut")
	in := filepath.Join(dir, "in.capture")
	data, err := os.ReadFile(exampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--select", "bogus=1", "--write-capture", out},
		{"--select", "check", "--write-capture", out},
		{"--select", "from=yesterday", "--write-capture", out},
		{"--select", "", "--write-capture", out},
		{"--select", "check=BASE-2"},
		{"--write-capture", out},
		{"--select", "check=BASE-2", "--write-capture", in},
		{"--select", "check=BASE-2", "--write-capture", link},
	} {
		r := runTap(t, "", append(append([]string{"replay"}, args...), in)...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, r.code, r.stderr)
		}
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("a refused command line wrote %s", out)
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Errorf("--write-capture followed a symlink")
	}
	if got, _ := os.ReadFile(in); string(got) != string(data) {
		t.Errorf("the input was changed")
	}
	// An input that is not a capture cannot be cut: exit 2, no file left.
	stream := filepath.Join(dir, "stream.jsonl")
	if err := os.WriteFile(stream, []byte(`{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","params":{}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runTap(t, "", "replay", "--select", "check=BASE-2", "--write-capture", out, stream); r.code != 2 || !strings.Contains(r.stderr, "not an ahp-tap capture") {
		t.Errorf("--write-capture of a stream: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("a failed cut left %s", out)
	}
	// The conforming case: the same selection to a new file works.
	if r := runTap(t, "", "replay", "--select", "check=BASE-2", "--write-capture", out, in); r.code != 1 {
		t.Errorf("a good selection: exit %d (want 1: the replay has findings)\n%s", r.code, r.stderr)
	}
}

// TestReplaySelectRetryKeepsFirstDelivery: per_event processes sharing
// --state, one event re-sent with another command (BASE-6 across
// processes). Selecting the retry keeps the first delivery's segment and
// exchange too, so the cut still finds BASE-6; the other events are left
// out.
func TestReplaySelectRetryKeepsFirstDelivery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	backend := writeScript(t, dir)
	capture := filepath.Join(dir, "retry.capture")
	flags := []string{"--lifecycle", "per_event", "--state", filepath.Join(dir, "state"), "--shared-audit=false",
		"--capture", capture, "--summary=false"}
	for _, req := range []string{intercept("e1", "ls"), intercept("e2", "ls"), intercept("e1", "rm -rf /"), intercept("e4", "ls")} {
		runEvent(t, req, flags, backend)
	}
	all := selReplayFindings(t, capture)
	base6 := func(f selFound) bool { return f.Check == "BASE-6" }
	if !slices.ContainsFunc(all, base6) {
		t.Fatalf("the whole capture has no BASE-6: %v", all)
	}
	checkSelection(t, capture, all, true, base6, "check=BASE-6")
	if _, h := captureExchanges(t, capture); h != 4 {
		t.Fatalf("capture has %d segments, want 4", h)
	}
}
