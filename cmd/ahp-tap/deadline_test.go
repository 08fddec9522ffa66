package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func init() {
	// slow answers each request line with a conforming result after
	// args[0] (a duration).
	helpers["slow"] = func(args []string) int {
		d, _ := time.ParseDuration(args[0])
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
		for sc.Scan() {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
				continue
			}
			time.Sleep(d)
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"draft","effects":[]}}`+"\n", m.ID)
		}
		return 0
	}
}

// logFindings reads a violation log: one map per finding.
func logFindings(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if l != "" && json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func ofCheck(fs []map[string]any, check string) []map[string]any {
	var out []map[string]any
	for _, f := range fs {
		if f["check"] == check {
			out = append(out, f)
		}
	}
	return out
}

// durations are the measured times in a message, which differ run to run.
var durations = regexp.MustCompile(`\d+(\.\d+)?(ms|s)\b`)

// TestLateAnswerSameOnBothTransports sends one intercept with a 100ms
// deadline to a backend that answers after 400ms, once wrapped by the
// stdio tap and once behind the HTTP tap: both report one CORR-3 warning
// with the same rule, pointer, ids and words (only the measured time
// differs), and neither a CORR-2.
func TestLateAnswerSameOnBothTransports(t *testing.T) {
	dir := t.TempDir()
	req := intercept("late1", "ls")

	stdioLog := filepath.Join(dir, "stdio.log")
	cmd := tapCmd([]string{"--timeout", "100ms", "--lifecycle", "persistent", "--log", stdioLog}, "slow", "400ms")
	cmd.Stdin = strings.NewReader(req + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ahp-tap stdio: %v\n%s", err, out)
	}

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(400 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"late1","result":{"protocolVersion":"draft","effects":[]}}`)
	}))
	defer up.Close()
	httpLog := filepath.Join(dir, "http.log")
	lt := startHTTPTap(t, "--upstream", up.URL, "--timeout", "100ms", "--log", httpLog)
	addr := lt.waitFor(t, "listening on", "http://")
	resp, err := http.Post("http://"+addr+"/agent-hooks", "application/json", strings.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	lt.cmd.Wait()

	var got []string
	for _, p := range []string{stdioLog, httpLog} {
		fs := logFindings(t, p)
		if c2 := ofCheck(fs, "CORR-2"); len(c2) != 0 {
			t.Errorf("%s: CORR-2 %v, want none (the request was answered)", filepath.Base(p), c2)
		}
		c3 := ofCheck(fs, "CORR-3")
		if len(c3) != 1 {
			t.Fatalf("%s: CORR-3 findings %v, want one", filepath.Base(p), c3)
		}
		f := c3[0]
		if f["level"] != "warn" || f["eventId"] != "late1" || f["rpcId"] != `"late1"` {
			t.Errorf("%s: CORR-3 %v, want a warning naming event late1", filepath.Base(p), f)
		}
		got = append(got, fmt.Sprint(f["rule"], " ", f["requirement"], " ", f["pointer"], " ", f["direction"], " ",
			durations.ReplaceAllString(f["message"].(string), "D")))
	}
	if got[0] != got[1] {
		t.Errorf("the same late answer differs by transport:\nstdio: %s\nhttp:  %s", got[0], got[1])
	}
}

// TestHTTPAuthFailureAnswersTheRequest: a backend refusing the harness's
// token (401 without a challenge, 403) answers each request at the HTTP
// layer. The log has the HTTP-2 facts and no CORR-2 "never answered".
func TestHTTPAuthFailureAnswersTheRequest(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/forbidden" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="ahp"`)
		http.Error(w, "wrong token", http.StatusUnauthorized)
	}))
	defer up.Close()
	logPath := filepath.Join(t.TempDir(), "v.log")
	lt := startHTTPTap(t, "--upstream", up.URL, "--log", logPath)
	addr := lt.waitFor(t, "listening on", "http://")
	for i, path := range []string{"/a", "/a", "/a", "/a", "/forbidden"} {
		req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(intercept(fmt.Sprintf("a%d", i), "ls")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer wrong-token-0123456789abcdef")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	lt.cmd.Wait()
	fs := logFindings(t, logPath)
	if c2 := ofCheck(fs, "CORR-2"); len(c2) != 0 {
		t.Errorf("CORR-2 findings %v; a 401/403 answers the request", c2)
	}
	h2 := ofCheck(fs, "HTTP-2")
	if len(h2) != 5 {
		t.Fatalf("HTTP-2 findings %v, want one per request (5)", h2)
	}
	if h2[4]["level"] != "error" || !strings.Contains(h2[4]["message"].(string), "403") {
		t.Errorf("the 403: %v, want an HTTP-2 error naming it", h2[4])
	}
}
