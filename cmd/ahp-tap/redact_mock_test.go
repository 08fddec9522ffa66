package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/examples"
)

// uEscape writes every byte of s as a \u00XX JSON escape.
func uEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&b, `\u%04X`, c)
	}
	return b.String()
}

// assertNoSecret fails for every form of every secret (encodings) found in
// any of outputs.
func assertNoSecret(t *testing.T, outputs map[string]string, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		for enc, form := range encodings(secret) {
			for name, data := range outputs {
				if strings.Contains(data, form) {
					t.Errorf("%q (%s) appears in the %s:\n%s", secret, enc, name, data)
				}
			}
		}
	}
}

// Issue 28 item 1: `mock harness --url --bearer-env` against a backend that
// echoes the token (JSON-escaped in protocolVersion: a BASE-2 finding and
// a difference line; as is in a deny reason) and a URL carrying a token in
// its query and userinfo: the token is in no form on stderr or in --log,
// and the echoes are AUTH-1 findings, as the HTTP tap reports them.
func TestMockHarnessNeverWritesToken(t *testing.T) {
	t.Parallel()
	const (
		token    = "mock/bearer+token-0123456789"
		queryTok = "query/api-key-0123456789"
		userTok  = "userinfo-token-0123456789"
	)
	capturePath, _ := recordSession(t, "conforming")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct{ ID json.RawMessage }
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","effects":[{"type":"deny","reason":"token %s, key %s"}]}}`,
			req.ID, uEscape(auth), auth, r.URL.Query().Get("api_key"))
	}))
	defer up.Close()
	target := strings.Replace(up.URL, "http://", "http://"+userTok+"@", 1) + "/hooks?api_key=" + queryTok
	logPath := filepath.Join(t.TempDir(), "harness.jsonl")
	cmd := exec.Command(tapBinary, "mock", "harness", "--url", target, "--bearer-env", "MOCK_REDACT_TOKEN",
		"--log", logPath, "--fail-on", "never", capturePath)
	cmd.Env = append(os.Environ(), "MOCK_REDACT_TOKEN="+token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if code := exitCode(err); code != 1 {
		t.Errorf("mock harness: exit %d, want 1 (every answer differs)\n%s", code, stderr.String())
	}
	logData, _ := os.ReadFile(logPath)
	out := map[string]string{"stderr": stderr.String(), "log": string(logData)}
	assertNoSecret(t, out, token, queryTok, userTok)
	for _, want := range []string{"BASE-2", "difference:", "AUTH-1"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if n := strings.Count(string(logData), `"check":"AUTH-1"`); n < 5 {
		t.Errorf("log has %d AUTH-1 findings, want one per echoing answer (5):\n%s", n, logData)
	}
}

// Issue 28 item 1 and issue 20 item 5: `mock backend --listen` redacts as
// the HTTP tap does: the unmatched line of a request whose event type is
// the harness's bearer token (JSON-escaped), a credential query parameter
// and an X-Api-Key header are in no form on stderr or in --log.
func TestMockBackendNeverWritesToken(t *testing.T) {
	t.Parallel()
	const (
		token    = "backend/bearer+token-0123456789"
		queryTok = "query/access-token-0123456789"
		apiKey   = "x-api-key-value-0123456789"
	)
	capturePath, _ := recordSession(t, "conforming")
	logPath := filepath.Join(t.TempDir(), "backend.jsonl")
	backend := exec.Command(tapBinary, "mock", "backend", "--listen", "127.0.0.1:0", "--fail-on", "never", "--log", logPath, capturePath)
	stderr, err := backend.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := backend.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Process.Kill(); backend.Wait() })
	br := bufio.NewReader(stderr)
	first, _ := br.ReadString('\n')
	url := regexp.MustCompile(`http://\S+`).FindString(first)
	if url == "" {
		t.Fatalf("mock backend did not say where it listens: %q", first)
	}
	body := `{"jsonrpc":"2.0","id":"u1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","type":"` +
		uEscape(token) + `","note":"` + queryTok + " " + apiKey + `"}}}`
	req, _ := http.NewRequest(http.MethodPost, url+"?access_token="+queryTok, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Api-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	backend.Process.Signal(syscall.SIGTERM)
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(br); rest <- string(b) }()
	var text string
	select {
	case text = <-rest:
	case <-time.After(time.Minute):
		t.Fatal("mock backend did not end on SIGTERM")
	}
	backend.Wait()
	logData, _ := os.ReadFile(logPath)
	assertNoSecret(t, map[string]string{"stderr": text, "log": string(logData)}, token, queryTok, apiKey)
	if !strings.Contains(text, "unmatched: hooks/intercept") {
		t.Errorf("stderr lacks the unmatched line:\n%s", text)
	}
	if !strings.Contains(string(logData), `"check":"AUTH-1"`) {
		t.Errorf("log: want AUTH-1 for the credentials in the body:\n%s", logData)
	}
}

// Issue 28 item 4: literal secrets in a registration never reach the
// capture header's registrationDoc (nor the log), whatever name or place
// holds them; the hook's configuration is still there for replay.
func TestRegistrationSecretsNotCaptured(t *testing.T) {
	t.Parallel()
	secrets := []string{"cs-secret-0123456789", "rt-refresh-0123456789", "pk-private-0123456789", "cred-pass-0123456789",
		"hdr-bearer-0123456789", "xk-apikey-0123456789", "ui-userpass-0123456789", "qk-query-0123456789", "tk-query-0123456789"}
	reg := `{"protocolVersion":"draft","hooks":[
	  {"id":"com.example.remote","transport":{"type":"http","url":"https://svc:ui-userpass-0123456789@policy.example.com/h?api_key=qk-query-0123456789&token=tk-query-0123456789"},
	   "authentication":{"type":"oauth","resource":"r","issuer":"https://id.example.com","clientId":"app","flow":"client_credentials","client_secret":"cs-secret-0123456789","refresh_token":"rt-refresh-0123456789"},
	   "headers":{"Authorization":"Bearer hdr-bearer-0123456789","X-Api-Key":"xk-apikey-0123456789"},
	   "privateKey":"pk-private-0123456789","credentials":{"password":"cred-pass-0123456789"},
	   "subscriptions":[{"events":["tool.before"],"mode":"observe","content":{"default":"metadata"}}]},
	  {"id":"` + examples.DemoHook + `","transport":{"type":"stdio","command":"x","lifecycle":"persistent"},
	   "subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"metadata"}},
	     {"events":["tool.after","session.end"],"mode":"observe","content":{"default":"metadata"}}]}]}`
	dir := t.TempDir()
	regPath, capPath, logPath := filepath.Join(dir, "hooks.json"), filepath.Join(dir, "s.capture"), filepath.Join(dir, "v.log")
	if err := os.WriteFile(regPath, []byte(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := selfCmd("example-harness", "--", tapBinary, "stdio", "--registration", regPath, "--hook", examples.DemoHook,
		"--capture", capPath, "--log", logPath, "--", tapBinary, "example-backend", "--mode", "conforming")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("recording: %v\n%s", err, stderr.String())
	}
	capData, err := os.ReadFile(capPath)
	if err != nil {
		t.Fatal(err)
	}
	logData, _ := os.ReadFile(logPath)
	assertNoSecret(t, map[string]string{"capture": string(capData), "log": string(logData), "stderr": stderr.String()}, secrets...)
	header, _, _ := strings.Cut(string(capData), "\n")
	for _, keep := range []string{`registrationDoc`, `\"timeoutMs\":5000`, `policy.example.com`, `\"clientId\":\"app\"`} {
		if !strings.Contains(header, strings.ReplaceAll(keep, `\"`, `"`)) && !strings.Contains(header, keep) {
			t.Errorf("capture header lacks %s:\n%s", keep, header)
		}
	}
	// Replay reads the hook's configuration from that header.
	if r := runTap(t, "", "replay", capPath); r.code != 0 {
		t.Errorf("replay of the capture: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Issue 28 item 13: the OTLP endpoint's credentials (userinfo, api_key and
// token query parameters) are neither in the "exporting … failed" line nor
// in the TAP-1 finding about the lost findings, in any form.
func TestOTLPEndpointCredentialsNotPrinted(t *testing.T) {
	t.Parallel()
	const (
		user  = "otlp-user-0123456789"
		pass  = "otlp-pass-0123456789"
		key   = "otlp-key-0123456789"
		token = "otlp-token-0123456789"
	)
	endpoint := "http://" + user + ":" + pass + "@127.0.0.1:1/v1/logs?api_key=" + key + "&token=" + token
	r := runTap(t, "", "replay", "--fail-on", "never", "--otlp-endpoint", endpoint, filepath.Join("testdata", "example.capture.jsonl"))
	out := r.stdout + r.stderr
	if !strings.Contains(r.stderr, "exporting findings to the OTLP collector at http://") || !strings.Contains(out, "not exported to the OTLP collector at http://") {
		t.Fatalf("want the failed-export line and the TAP-1 finding; exit %d:\n%s", r.code, out)
	}
	assertNoSecret(t, map[string]string{"stdout": r.stdout, "stderr": r.stderr}, user, pass, key, token)
	if !strings.Contains(out, "127.0.0.1:1/v1/logs") {
		t.Errorf("the endpoint is no longer named:\n%s", out)
	}
}

// Issue 28 item 20: `mock backend --stdio` keeps at most its cap of one
// harness line: a 256 MiB line without "\n" is audited as truncated and
// not answered, and the mock's memory stays far below the line (it held
// the line whole: a 2 GiB line was an out-of-memory crash).
func TestMockBackendStdioBoundsALine(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("256 MiB through a pipe")
	}
	capturePath, _ := recordSession(t, "conforming")
	cmd := exec.Command(tapBinary, "mock", "backend", "--stdio", "--fail-on", "never", capturePath)
	stdin, _ := cmd.StdinPipe()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range 256 {
		if _, err := stdin.Write(chunk); err != nil {
			t.Fatalf("the mock stopped reading: %v", err)
		}
	}
	stdin.Close()
	cmd.Wait()
	peak := rss(cmd)
	t.Logf("peak RSS of mock backend --stdio reading a 256 MiB line: %.1f MiB", peak)
	if peak > 200 && !raceEnabled { // ~120 MiB whatever the length (1 GiB measured too): two 16 MiB line caps, the GC's headroom
		t.Errorf("peak RSS %.1f MiB for a 256 MiB line; want it bounded (< 200 MiB)", peak)
	}
	if !strings.Contains(stderr.String(), "a harness line of 268435456 bytes is longer than") {
		t.Errorf("stderr does not say the line was not answered:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "TAP-1") {
		t.Errorf("no TAP-1 for the truncated audit copy:\n%s", stderr.String())
	}
}

// Issue 28 item 11: `mock backend --listen` on an address other than
// loopback is refused (exit 2, one line) unless --allow-remote, as the
// HTTP tap's --forward and --metrics are.
func TestMockBackendListenLoopbackOnly(t *testing.T) {
	t.Parallel()
	capturePath, _ := recordSession(t, "conforming")
	for _, addr := range []string{":0", "0.0.0.0:0"} {
		r := runTap(t, "", "mock", "backend", "--listen", addr, capturePath)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "--allow-remote") {
			t.Errorf("--listen %s: exit %d, stderr %q; want exit 2 and one line naming --allow-remote", addr, r.code, r.stderr)
		}
	}
	// With --allow-remote it serves, and says so.
	cmd := exec.Command(tapBinary, "mock", "backend", "--listen", "0.0.0.0:0", "--allow-remote", capturePath)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	first, _ := bufio.NewReader(stderr).ReadString('\n')
	if !strings.Contains(first, "WARNING: --allow-remote") {
		t.Errorf("--allow-remote: first line %q, want the warning", first)
	}
}

// Issue 28 item 11: a harness that trickles a request body holds a mock
// backend connection no longer than --read-timeout; a request sent in time
// is still answered.
func TestMockBackendClosesSlowBodies(t *testing.T) {
	t.Parallel()
	capturePath, _ := recordSession(t, "conforming")
	cmd := exec.Command(tapBinary, "mock", "backend", "--listen", "127.0.0.1:0", "--read-timeout", "1s", "--fail-on", "never", capturePath)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	first, _ := bufio.NewReader(stderr).ReadString('\n')
	addr := strings.TrimPrefix(regexp.MustCompile(`http://[^/\s]+`).FindString(first), "http://")
	if addr == "" {
		t.Fatalf("mock backend did not say where it listens: %q", first)
	}
	var slow []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		slow = append(slow, c)
	}
	// A legitimate request meanwhile is answered.
	resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":"x","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Every slow connection is closed by the mock (read: EOF or reset),
	// well before this test's own bound.
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		var b [512]byte
		for {
			_, err := c.Read(b[:])
			if err == nil {
				continue
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("slow connection %d still open after a minute", i)
			}
			break
		}
	}
}

// Issue 28 item 17: unwrap trusts only the fragment wrap wrote. A
// registration url carrying a forged `#ahp-tap-upstream=` fragment (a third
// party's, or wrap's own with the original url edited) is neither
// rewritten by unwrap nor reported "already wrapped" by wrap; what wrap
// wrote still unwraps byte for byte.
func TestUnwrapTrustsOnlyWrapsMark(t *testing.T) {
	t.Parallel()
	evil := url.QueryEscape(`https:\/\/evil.example\/h`)
	orig := `{"protocolVersion":"draft","hooks":[{"id":"com.example.p","transport":{"type":"http","url":"https://policy.example.com/h"},"subscriptions":[{"events":["tool.before"],"mode":"observe","content":{"default":"metadata"}}]}]}`
	forged := strings.Replace(orig, `"https://policy.example.com/h"`, `"https://policy.example.com/h#ahp-tap-upstream=`+evil+`"`, 1)
	dir := t.TempDir()
	forgedPath := writeFile(t, "forged.json", forged)
	if u := runTap(t, "", "unwrap", forgedPath); u.code != 0 || u.stdout != forged || strings.Contains(u.stdout, "evil.example\"") {
		t.Errorf("unwrap of a forged fragment: exit %d, stdout\n%s\nwant the document unchanged", u.code, u.stdout)
	}
	if w := runTap(t, "", "wrap", "--dir", filepath.Join(dir, "logs"), forgedPath); strings.Contains(w.stderr, "already wrapped") {
		t.Errorf("wrap calls a forged fragment already wrapped:\n%s", w.stderr)
	}
	// What wrap wrote unwraps; the same with the original url edited in
	// the fragment does not.
	origPath := writeFile(t, "hooks.json", orig)
	w := runTap(t, "", "wrap", "--dir", filepath.Join(dir, "logs"), origPath)
	if w.code != 0 || !strings.Contains(w.stdout, "ahp-tap-mark=") {
		t.Fatalf("wrap: exit %d\n%s%s", w.code, w.stdout, w.stderr)
	}
	if u := runTap(t, "", "unwrap", writeFile(t, "w.json", w.stdout)); u.stdout != orig {
		t.Errorf("unwrap of wrap's own output:\n%s\nwant\n%s", u.stdout, orig)
	}
	tampered := strings.Replace(w.stdout, "policy.example.com", "evil.example", 1)
	if tampered == w.stdout {
		t.Fatal("no original url in the wrapped fragment")
	}
	if u := runTap(t, "", "unwrap", writeFile(t, "t.json", tampered)); u.stdout != tampered {
		t.Errorf("unwrap of a tampered fragment rewrote the url:\n%s", u.stdout)
	}
}

// Issue 28 item 19: harnesses trickling request bodies (a byte now and
// then) hold the HTTP tap's connections, and the upstream connections
// behind them, no longer than --read-timeout plus a second per 16 KiB
// received, as slow heads are bounded; a request sent meanwhile is served.
func TestHTTPTapClosesSlowBodies(t *testing.T) {
	t.Parallel()
	var open atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"c","result":{"protocolVersion":"draft"}}`)
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	up.Start()
	defer up.Close()
	const upKey = "upstream-api-key-0123456789"
	lt := startHTTPTap(t, "--upstream", up.URL+"/?api_key="+upKey, "--read-timeout", "1s")
	addr := lt.waitFor(t, "listening on", "http://")
	// (A credential in --upstream's query is not printed either.)
	if strings.Contains(lt.stderrText(), upKey) {
		t.Errorf("the --upstream query credential is on stderr:\n%s", lt.stderrText())
	}
	defer func() { lt.cmd.Process.Signal(syscall.SIGTERM); <-lt.done; lt.cmd.Wait() }()
	var slow []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		slow = append(slow, c)
	}
	deadline := time.Now().Add(time.Minute)
	trickleUntilClosed(t, slow)
	// The upstream connections behind them are closed too.
	for open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := open.Load(); n > 0 {
		t.Errorf("%d upstream connections still open", n)
	}
	// A request sent in time is served.
	resp, err := http.Post("http://"+addr+"/h", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":"c","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"result"`) {
		t.Errorf("a legitimate request: %d %s", resp.StatusCode, body)
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// openFDs counts a process's open descriptors (Linux).
func openFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// Issue 28 item 15: two taps pointing at each other. One request used to
// go round until each tap held ~10k descriptors; now it comes back once
// marked with the hop field and is answered 508 Loop Detected, and the
// taps are left with a handful of descriptors.
func TestHTTPTapsPointingAtEachOther(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc")
	}
	a, b := freePort(t), freePort(t)
	ta := startHTTPTap(t, "--listen", a, "--upstream", "http://"+b)
	ta.waitFor(t, "listening on", "http://")
	tb := startHTTPTap(t, "--listen", b, "--upstream", "http://"+a)
	tb.waitFor(t, "listening on", "http://")
	defer func() {
		for _, lt := range []*liveTap{ta, tb} {
			lt.cmd.Process.Signal(syscall.SIGTERM)
			<-lt.done
			lt.cmd.Wait()
		}
	}()
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Post("http://"+a+"/h", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":"c","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`))
	if err != nil {
		t.Fatalf("the request did not come back: %v (fds: a %d, b %d)", err, openFDs(ta.cmd.Process.Pid), openFDs(tb.cmd.Process.Pid))
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected || !strings.Contains(string(body), "chain of ahp-tap taps") {
		t.Errorf("got %d %q, want 508 naming the chain of taps", resp.StatusCode, body)
	}
	for name, lt := range map[string]*liveTap{"a": ta, "b": tb} {
		if n := openFDs(lt.cmd.Process.Pid); n > 64 {
			t.Errorf("tap %s holds %d descriptors after the loop", name, n)
		}
	}
}

// trickleUntilClosed keeps trickling, one byte per connection every
// 200 ms, until the tap closes each (a write or read fails), within a
// bound far above the timeouts the tests give.
func trickleUntilClosed(t *testing.T, slow []net.Conn) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	closed := make([]bool, len(slow))
	for left := len(slow); left > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d slow-body connections still open after a minute", left)
		}
		time.Sleep(200 * time.Millisecond)
		for i, c := range slow {
			if closed[i] {
				continue
			}
			c.SetReadDeadline(time.Now().Add(time.Millisecond))
			var b [256]byte
			_, rerr := c.Read(b[:])
			_, werr := c.Write([]byte(" "))
			if ne, ok := rerr.(net.Error); (rerr != nil && !(ok && ne.Timeout())) || werr != nil {
				closed[i] = true
				left--
			}
		}
	}
}

// Issue 28 item 19, forward mode: plain-HTTP requests through
// `http --forward` with trickled bodies are closed the same way.
func TestHTTPForwardClosesSlowBodies(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer up.Close()
	lt := startHTTPTap(t, "--forward", "--read-timeout", "1s")
	addr := lt.waitFor(t, "forward proxy on", "HTTP_PROXY/HTTPS_PROXY=http://")
	defer func() { lt.cmd.Process.Signal(syscall.SIGTERM); <-lt.done; lt.cmd.Wait() }()
	host := strings.TrimPrefix(up.URL, "http://")
	var slow []net.Conn
	for range 10 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s/h HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", up.URL, host)
		slow = append(slow, c)
	}
	trickleUntilClosed(t, slow)
}
