package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// encodings are the forms a secret could take in a file: as is, JSON
// escaped the ways peers escape (PHP's "\/", "\u00XX" in either case),
// percent-encoded, base64; and each of those as it reads once written
// inside a JSON string (a capture record's "raw", a log message).
func encodings(secret string) map[string]string {
	u := func(format string) string {
		var b strings.Builder
		for _, c := range []byte(secret) {
			fmt.Fprintf(&b, format, c)
		}
		return b.String()
	}
	forms := map[string]string{
		"as is":            secret,
		`"\/" escaped`:     strings.ReplaceAll(secret, "/", `\/`),
		`"\u00XX" escaped`: u(`\u%04X`),
		`"\u00xx" escaped`: u(`\u%04x`),
		"percent-encoded":  url.QueryEscape(secret),
		"path-escaped":     url.PathEscape(secret),
		"base64":           base64.StdEncoding.EncodeToString([]byte(secret)),
	}
	for name, form := range maps.Clone(forms) {
		js, _ := json.Marshal(form)
		forms[name+", in a JSON string"] = strings.Trim(string(js), `"`)
	}
	return forms
}

// Issue 8 item 1: a real HTTP tap on loopback, with credentials arriving in
// every form the issue names, writes none of them to any file or stream.
func TestHTTPTapNeverWritesSecrets(t *testing.T) {
	t.Parallel()
	const (
		token     = "e2e/tok+en/0123456789abcdef" // "/" and "+" so that escaping matters
		apiKey    = "api-key/0123456789"
		cookie    = "cookie-session-0123456789"
		custom    = "custom/secret-0123456789"
		queryTok  = "query/token-0123456789"
		proxyPass = "proxy-password-0123"
	)
	escaped := strings.ReplaceAll(token, "/", `\/`) // PHP json_encode
	var uEscaped strings.Builder                    // every byte as \u00XX
	for _, c := range []byte(token) {
		fmt.Fprintf(&uEscaped, `\u%04X`, c)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Set-Cookie", "session="+cookie+"; HttpOnly")
		if r.URL.Path == "/text" {
			http.Error(w, "bad token "+url.QueryEscape(token), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// A careless backend echoes the token, escaped, in a deny reason.
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[{"type":"deny","reason":"token `+uEscaped.String()+` rejected"}]}}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "s.capture")
	lt := startHTTPTap(t, "--upstream", up.URL, "--log", logPath, "--capture", capPath, "-v",
		"--redact-header", "X-Custom-Secret")
	addr := lt.waitFor(t, "listening on", "http://")

	send := func(path, auth, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth)
		req.Header.Set("Cookie", "session="+cookie)
		req.Header.Set("X-Api-Key", apiKey)
		req.Header.Set("X-Custom-Secret", custom)
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:"+proxyPass)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	request := func(id, auth string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id + `","auth":"` + auth + `"}}}`
	}
	// The token with a TAB after the scheme, JSON-escaped in the body,
	// and a credential query parameter.
	send("/hook?access_token="+url.QueryEscape(queryTok), "Bearer\t"+token, request("e1", escaped))
	send("/text", "Bearer "+token, request("e2", "x"))
	// Twenty newer tokens, then the first one in a body again: it must
	// still be remembered (the old code kept only the latest 16).
	for i := range 20 {
		send("/hook", fmt.Sprintf("Bearer newer-token-%04d", i), request(fmt.Sprintf("n%d", i), "x"))
	}
	send("/hook", "Bearer newer-token-9999", request("old", uEscaped.String()))

	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	if err := lt.cmd.Wait(); err != nil {
		t.Fatalf("ahp-tap http after SIGTERM: %v; stderr:\n%s", err, lt.stderrText())
	}

	// Every file the tap wrote, and its stderr.
	outputs := map[string]string{"stderr": lt.stderrText()}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		outputs[e.Name()] = string(data)
	}
	if len(outputs) != 3 {
		t.Errorf("outputs %v, want stderr, the log and the capture", len(outputs))
	}
	// Issue 24: the HTML conversation view of the capture (ahp-tap view)
	// shows its exchanges, with the redaction marker and no credential.
	page := filepath.Join(t.TempDir(), "view.html")
	if r := runTap(t, "", "view", "--out", page, capPath); r.code != 0 {
		t.Fatalf("view: exit %d\n%s", r.code, r.stderr)
	}
	view, _ := os.ReadFile(page)
	if !strings.Contains(string(view), `"k":"request"`) || !strings.Contains(string(view), "[ahp-tap: credential redacted]") {
		t.Errorf("the view holds no request or no redaction marker")
	}
	outputs["view page"] = string(view)
	for _, secret := range []string{token, apiKey, cookie, custom, queryTok, proxyPass} {
		for enc, form := range encodings(secret) {
			for name, data := range outputs {
				if strings.Contains(data, form) {
					t.Errorf("%s (%s) appears in the %s", secret, enc, name)
				}
			}
		}
	}
	// And the leaks were reported where they were.
	logData := outputs["v.log"]
	var where []string
	for _, line := range strings.Split(strings.TrimSpace(logData), "\n") {
		var f struct{ Check, Pointer, Direction string }
		if json.Unmarshal([]byte(line), &f) == nil && f.Check == "AUTH-1" {
			where = append(where, f.Direction+" "+f.Pointer)
		}
	}
	got := strings.Join(where, "\n")
	for _, w := range []string{"harness /params/event/auth", "backend /result/effects/0/reason"} {
		if strings.Count(got, w) < 2 {
			t.Errorf("AUTH-1 findings:\n%s\nwant at least two at %q (the escaped token, and the old one)", got, w)
		}
	}
	if !strings.Contains(outputs["s.capture"], "[ahp-tap: credential redacted]") {
		t.Errorf("the capture holds no redaction marker")
	}
}

func TestRedactFlagsUsage(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "a b", "X-Key:", "a\tb"} {
		r := runTap(t, "", "http", "--upstream", "http://127.0.0.1:1", "--redact-header", name)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "redact-header") {
			t.Errorf("--redact-header %q: exit %d, stderr %q; want exit 2 and one line naming the flag", name, r.code, r.stderr)
		}
	}
}
