package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDiffStdioRecordings records live stdio sessions through the built
// binary's tap: two runs of the same backend are equal (exit 0), and a
// backend that answers differently is a difference (exit 1) naming the
// exchange, what changed in its answer and the findings gone.
func TestDiffStdioRecordings(t *testing.T) {
	t.Parallel()
	demo1, _ := recordSession(t, "demo")
	demo2, _ := recordSession(t, "demo")
	conforming, _ := recordSession(t, "conforming")

	if r := runTap(t, "", "diff", demo1, demo2); r.code != 0 || !strings.Contains(r.stdout, "5 matched") || !strings.Contains(r.stdout, "equal") {
		t.Errorf("diff of two runs of the same backend: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The window bounds what waits unmatched: with one byte, nothing
	// waits for its match and every exchange is reported unmatched.
	if r := runTap(t, "", "diff", "--window", "1", demo1, demo2); r.code != 1 || !strings.Contains(r.stdout, "[unmatched past the --window]") {
		t.Errorf("diff --window 1: exit %d, want 1 with evictions\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Two live runs never take the same nanoseconds: a 1ns threshold
	// reports latency; the default does not compare it (above).
	if r := runTap(t, "", "diff", "--latency", "1ns", demo1, demo2); r.code != 1 || !strings.Contains(r.stdout, "    latency: A ") {
		t.Errorf("diff --latency 1ns: exit %d, want 1 with latency\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := runTap(t, "", "diff", demo1, conforming)
	for _, want := range []string{
		`changed event evt_demo_4#1`, // the demo backend's modify, a deny when conforming
		`/result/effects/0/type: A "modify", B "deny"`,
		`/result/protocolVersion: A "2025-01-01", B "draft"`,
		`gone finding: BASE-9 BASE-9/authority`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff demo conforming lacks %q", want)
		}
	}
	if r.code != 1 {
		t.Errorf("diff demo conforming: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = runTap(t, "", "diff", "--format", "json", demo1, conforming)
	var res struct {
		Equal   bool
		Changed []struct {
			Exchange    string
			Differences []struct{ Pointer, A, B string }
		}
		GoneFindings []struct{ Kind string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 1 {
		t.Fatalf("diff --format json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if res.Equal || len(res.Changed) != 2 || res.Changed[0].Exchange != "event evt_demo_4#1" || len(res.GoneFindings) == 0 {
		t.Errorf("diff --format json = %+v", res)
	}
}

// TestDiffPerEventAndHTTP: a per_event capture (one segment per backend
// process, appended to one file) and captures of the HTTP tap; a changed
// decision on one event is named, the unchanged event is not.
func TestDiffPerEventAndHTTP(t *testing.T) {
	t.Parallel()
	msg := func(id, cmdText string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id + `","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"},"tool":{"name":"Bash","input":{"command":"` + cmdText + `"}}},"capabilities":{"effects":["deny"]}}}` + "\n"
	}
	dir := t.TempDir()
	perEvent := func(name, mode string) string {
		p := filepath.Join(dir, name)
		for _, in := range []string{msg("e1", "ls"), msg("e2", "git push --force")} {
			cmd := selfCmd("stdio", "--lifecycle", "per_event", "--capture", p, "--", childBinary, "example-backend", "--mode", mode)
			cmd.Stdin = strings.NewReader(in)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("recording: %v\n%s", err, out)
			}
		}
		return p
	}
	a, b, c := perEvent("a.jsonl", "conforming"), perEvent("b.jsonl", "conforming"), perEvent("c.jsonl", "unadvertised")
	if r := runTap(t, "", "diff", a, b); r.code != 0 || !strings.Contains(r.stdout, "2 matched") {
		t.Errorf("per_event diff of equal runs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := runTap(t, "", "diff", a, c)
	if r.code != 1 || !strings.Contains(r.stdout, "changed event e1#1") || !strings.Contains(r.stdout, "new finding: BASE-9") {
		t.Errorf("per_event diff conforming unadvertised: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	httpCapture := func(name, decision string) string {
		p := filepath.Join(dir, name)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req struct{ ID string }
			json.NewDecoder(r.Body).Decode(&req)
			w.Header().Set("Content-Type", "application/json")
			effects := `[]`
			if req.ID == "e2" {
				effects = `[{"type":"` + decision + `","reason":"no"}]`
				if decision == "" {
					effects = `[]`
				}
			}
			io.WriteString(w, `{"jsonrpc":"2.0","id":"`+req.ID+`","result":{"protocolVersion":"draft","effects":`+effects+`}}`)
		}))
		defer up.Close()
		lt := startHTTPTap(t, "--upstream", up.URL, "--capture", p, "--log", filepath.Join(dir, name+".log"))
		addr := lt.waitFor(t, "listening on", "http://")
		for _, body := range []string{msg("e1", "ls"), msg("e2", "git push --force")} {
			resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		lt.cmd.Process.Signal(syscall.SIGTERM)
		<-lt.done
		if err := lt.cmd.Wait(); err != nil {
			t.Fatalf("ahp-tap http: %v\n%s", err, lt.stderrText())
		}
		return p
	}
	ha, hb, hc := httpCapture("ha.jsonl", "deny"), httpCapture("hb.jsonl", "deny"), httpCapture("hc.jsonl", "")
	if r := runTap(t, "", "diff", ha, hb); r.code != 0 || !strings.Contains(r.stdout, "2 matched") {
		t.Errorf("http diff of equal runs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runTap(t, "", "diff", ha, hc)
	if r.code != 1 || !strings.Contains(r.stdout, "changed event e2#1") || strings.Contains(r.stdout, "event e1#1") ||
		!strings.Contains(r.stdout, `/result/effects/0: A {"reason":"no","type":"deny"}, B absent`) {
		t.Errorf("http diff deny allow: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDiffBadInputAndEscapes: bad flags and a file that is not a capture
// are exit 2 with one line; an event id carrying a terminal escape is
// printed escaped; only one side holding an exchange is a difference.
func TestDiffBadInputAndEscapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notCapture := filepath.Join(dir, "x.json")
	os.WriteFile(notCapture, []byte("{}\n"), 0o600)
	const header = `{"type":"header","format":"ahp-tap-capture","version":1,"tool":"test","snapshot":"draft","transport":"stdio","started":"2026-01-01T00:00:00Z","conn":"stdio:1"}`
	req := `{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"ev\u001b[31mil","type":"tool.before"}}}`
	frame := func(seq, dir, raw string) string {
		q, _ := json.Marshal(raw)
		return `{"type":"frame","time":"2026-01-01T00:00:00Z","seq":` + seq + `,"direction":"` + dir + `","transport":"stdio","conn":"stdio:1","framing":{"line":true},"raw":` + string(q) + `}`
	}
	evil := filepath.Join(dir, "evil.jsonl")
	os.WriteFile(evil, []byte(header+"\n"+frame("1", "harness", req)+"\n"), 0o600)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, []byte(header+"\n"), 0o600)

	for _, args := range [][]string{{"diff", evil}, {"diff", "--format", "xml", evil, evil}, {"diff", "--bogus", evil, evil}, {"diff", notCapture, evil}, {"diff", evil, filepath.Join(dir, "missing")}} {
		if r := runTap(t, "", args...); r.code != 2 || !strings.HasPrefix(r.stderr, "ahp-tap diff: ") {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
	if r := runTap(t, "", "diff", evil, evil); r.code != 0 {
		t.Errorf("diff of a capture with itself: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := runTap(t, "", "diff", evil, empty)
	if r.code != 1 || !strings.Contains(r.stdout, "only in A: event ev") || strings.Contains(r.stdout, "\x1b") {
		t.Errorf("diff evil empty: exit %d, want 1, no raw escape\n%q", r.code, r.stdout)
	}
}
