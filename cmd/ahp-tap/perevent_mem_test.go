package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

// perEventCapture writes what a shared audit process records for n
// per_event backend processes, one event each: every connection starts,
// gets a request, answers it (all but the connection numbered unanswered),
// ends its output and exits. A child without the race detector writes it
// (generate).
func perEventCapture(t *testing.T, n, unanswered int) string {
	t.Helper()
	return generate(t, "perevent.capture", "perevent", strconv.Itoa(n), strconv.Itoa(unanswered))
}

func init() {
	// perevent PATH N UNANSWERED: see perEventCapture.
	generators["perevent"] = func(p string, args []string) error {
		n, err1 := strconv.Atoi(args[0])
		unanswered, err2 := strconv.Atoi(args[1])
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		return perEventFile(p, n, unanswered)
	}
}

func perEventFile(p string, n, unanswered int) error {
	data, err := os.ReadFile(exampleCapture)
	if err != nil {
		return err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	var h map[string]any
	if err := json.Unmarshal([]byte(line), &h); err != nil {
		return err
	}
	h["lifecycle"], h["state"], h["conn"] = "per_event", "/tmp/ahp-state", "shared"
	h["registrationDoc"].(map[string]any)["hooks"].([]any)[0].(map[string]any)["transport"].(map[string]any)["lifecycle"] = "per_event"
	header, _ := json.Marshal(h)
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(append(header, '\n'))
	start := time.Date(2026, 8, 24, 8, 51, 14, 0, time.UTC)
	for i := 1; i <= n; i++ {
		conn := fmt.Sprintf("stdio:%d", 100000+i)
		ts := start.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
		req := fmt.Sprintf(`{\"jsonrpc\":\"2.0\",\"id\":\"evt-%d\",\"method\":\"hooks/intercept\",\"params\":{\"protocolVersion\":\"draft\",\"event\":{\"id\":\"evt-%d\",\"source\":\"urn:uuid:0d8c6a52-3f0e-4d8e-9b1a-2f6b9a7c1e01\",\"type\":\"tool.before\",\"time\":\"2026-08-24T08:51:14Z\",\"harness\":{\"name\":\"h\",\"version\":\"1\"},\"session\":{\"id\":\"s\",\"cwd\":\"/w\"},\"tool\":{\"name\":\"Bash\",\"kind\":\"shell\",\"input\":{\"command\":\"ls\"},\"origin\":\"native\"},\"call\":{\"id\":\"c%d\"},\"path\":\"main\"},\"capabilities\":{\"effects\":[\"deny\"]}}}`, i, i, i)
		resp := fmt.Sprintf(`{\"jsonrpc\":\"2.0\",\"id\":\"evt-%d\",\"result\":{\"protocolVersion\":\"draft\",\"effects\":[]}}`, i)
		fmt.Fprintf(w, `{"type":"note","time":%q,"conn":%q,"note":{"kind":"start","time":%q,"conn":%q}}`+"\n", ts, conn, ts, conn)
		fmt.Fprintf(w, `{"type":"frame","time":%q,"seq":%d,"direction":"harness","transport":"stdio","conn":%q,"raw":"%s"}`+"\n", ts, 2*i-1, conn, req)
		if i != unanswered {
			fmt.Fprintf(w, `{"type":"frame","time":%q,"seq":%d,"direction":"backend","transport":"stdio","conn":%q,"raw":"%s"}`+"\n", ts, 2*i, conn, resp)
		}
		fmt.Fprintf(w, `{"type":"note","time":%q,"conn":%q,"note":{"kind":"eof","time":%q,"conn":%q,"direction":"backend"}}`+"\n", ts, conn, ts, conn)
		fmt.Fprintf(w, `{"type":"note","time":%q,"conn":%q,"note":{"kind":"exit","time":%q,"conn":%q}}`+"\n", ts, conn, ts, conn)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Replay of 40,000 per_event connections in one segment (as a shared
// audit process records them): a connection whose process exited is
// finished and let go, so memory does not grow with the connections, and
// its findings are still reported (issue 28 item 9: ~14 KB per connection
// for ever, 200,000 connections took 4.2 GB).
func TestReplayPerEventConnectionsBounded(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	if testing.Short() {
		t.Skip("a 60 MB capture")
	}
	p := perEventCapture(t, 40000, 20000)
	r, peak := runMeasured(t, "replay", "--fail-on", "never", p)
	t.Logf("peak RSS replaying 40,000 per_event connections: %.1f MiB", peak)
	if r.code != 0 {
		t.Fatalf("replay: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "80000 frames audited") && !strings.Contains(r.stdout, "79999 frames audited") {
		t.Errorf("frames: %s", tailLines(r.stdout, 5))
	}
	if n := strings.Count(r.stdout, "error CORR-2"); n != 1 || !strings.Contains(r.stdout, `request id "evt-20000" was never answered: the backend`) {
		t.Errorf("want one CORR-2 for evt-20000 (%d):\n%s", n, tailLines(r.stdout, 8))
	}
	if peak > 200 && !raceEnabled {
		t.Errorf("peak RSS %.1f MiB, want < 200 MiB", peak)
	}
}

// mock backend holds a recording's frames as recorded, not decoded: a
// 40 MB capture of 30,000 exchanges costs a fraction of what its decoded
// trees did (issue 28 item 9: a 72 MiB capture took 888 MB), and the mock
// still answers from it.
func TestMockBackendRecordingMemory(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	if testing.Short() {
		t.Skip("a 40 MB capture")
	}
	p := perEventCapture(t, 30000, 0)
	req := `{"jsonrpc":"2.0","id":"q-7","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"evt-7","source":"urn:uuid:0d8c6a52-3f0e-4d8e-9b1a-2f6b9a7c1e01","type":"tool.before","time":"2026-08-24T08:51:14Z","harness":{"name":"h","version":"1"},"session":{"id":"s","cwd":"/w"},"tool":{"name":"Bash","kind":"shell","input":{"command":"ls"},"origin":"native"},"call":{"id":"c7"},"path":"main"},"capabilities":{"effects":["deny"]}}}` + "\n"
	cmd := exec.Command(tapBinary, "mock", "backend", "--stdio", "--quiet", "--fail-on", "never", p)
	cmd.Stdin = strings.NewReader(req)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	waitWithin(t, cmd, 3*time.Minute)
	peak := rss(cmd)
	t.Logf("peak RSS of mock backend loading 30,000 exchanges: %.1f MiB", peak)
	if code := cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(stderr.String(), "1 requests answered from the recording") {
		t.Fatalf("mock backend: exit %d, stderr %q", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"id":"q-7","result":{"protocolVersion":"draft","effects":[]}`) {
		t.Errorf("mock backend answered %q, want the recorded answer with the request's id", stdout.String())
	}
	if peak > 200 && !raceEnabled {
		t.Errorf("peak RSS %.1f MiB, want < 200 MiB", peak)
	}
}
