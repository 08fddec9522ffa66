package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/browser"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

// Issue 24 item 2: 'ahp-tap view CAPTURE' replays a real recording into
// the HTML conversation view, writes it to a new 0600 file and prints its
// path; findings are what the page shows (exit 0), an input that cannot
// be read is exit 2 and leaves no file behind.
func TestViewWritesThePage(t *testing.T) {
	t.Parallel()
	capPath, _ := recordSession(t, "demo")
	tmp := t.TempDir()
	r := runTapEnv(t, []string{"TMPDIR=" + tmp}, "view", capPath)
	if r.code != 0 {
		t.Fatalf("view: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	path := strings.TrimSpace(r.stdout)
	if filepath.Dir(path) != tmp || !strings.HasPrefix(filepath.Base(path), "ahp-tap-view-") || !strings.HasSuffix(path, ".html") {
		t.Fatalf("view printed %q, want a new ahp-tap-view-*.html in TMPDIR", r.stdout)
	}
	st, err := os.Lstat(path)
	if err != nil || st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
		t.Fatalf("the page: %v, mode %v, want a regular 0600 file", err, st.Mode())
	}
	page, _ := os.ReadFile(path)
	for _, want := range []string{`id="data-timeline">[{`, `"k":"request"`, `"k":"response"`, `"k":"note"`, `"out":"explicit_deny"`, "tool.before"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}

	// --out names the file; one through a symlink is refused (exit 2).
	out := filepath.Join(t.TempDir(), "page.html")
	if r := runTap(t, "", "view", "--out", out, capPath); r.code != 0 || strings.TrimSpace(r.stdout) != out {
		t.Errorf("view --out: exit %d, stdout %q", r.code, r.stdout)
	}
	link := filepath.Join(t.TempDir(), "link.html")
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	os.Symlink(target, link)
	if r := runTap(t, "", "view", "--out", link, capPath); r.code != 2 {
		t.Errorf("view --out SYMLINK: exit %d, want 2\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Error("view wrote through a symlink")
	}

	// An input that is not there: exit 2, one line, no page left behind.
	tmp2 := t.TempDir()
	r = runTapEnv(t, []string{"TMPDIR=" + tmp2}, "view", filepath.Join(tmp2, "missing.capture"))
	if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stdout != "" {
		t.Errorf("view of a missing file: exit %d, stdout %q, stderr %q; want 2 and one line", r.code, r.stdout, r.stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp2, "ahp-tap-view-*")); len(left) != 0 {
		t.Errorf("a failed view left %v", left)
	}
	// Bad flags and no input are usage errors.
	for _, args := range [][]string{{"view"}, {"view", "--bogus", capPath}, {"view", "--listen", "0.0.0.0:0", capPath}} {
		if r := runTap(t, "", args...); r.code != 2 || r.stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, r.code, r.stderr)
		}
	}
}

// 'ahp-tap view --listen 127.0.0.1:0' serves the page on loopback: to GET
// only, to loopback Host names only (no DNS rebinding), with the report's
// Content-Security-Policy; a browser opens it; SIGINT stops it (exit 0).
func TestViewListen(t *testing.T) {
	t.Parallel()
	capPath, _ := recordSession(t, "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tapBinary, "view", "--out", filepath.Join(t.TempDir(), "p.html"), "--listen", "127.0.0.1:0", capPath)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	var lines []string
	for len(lines) < 2 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "http://127.0.0.1:") {
		t.Fatalf("view --listen printed %q; stderr %s", lines, stderr.String())
	}
	url := lines[1]
	file, _ := os.ReadFile(lines[0])
	get := func(method, host, path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, url+strings.TrimPrefix(path, "/"), nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := get("GET", "", "/")
	if resp.StatusCode != 200 || !bytes.Equal(body, file) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("GET /: %d %v, %d bytes (file %d)", resp.StatusCode, resp.Header, len(body), len(file))
	}
	if resp, _ := get("GET", "localhost", "/"); resp.StatusCode != 200 {
		t.Errorf("Host localhost: %d, want 200", resp.StatusCode)
	}
	if resp, _ := get("GET", "attacker.example", "/"); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host attacker.example: %d, want 421", resp.StatusCode)
	}
	if resp, _ := get("POST", "", "/"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
	if resp, _ := get("GET", "", "/etc/passwd"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /etc/passwd: %d, want 404", resp.StatusCode)
	}
	// A real browser renders the served conversation (an end-to-end
	// part: CI's -tags e2e build runs it).
	if bin := browser.Find(); bin != "" && e2e.Enabled {
		dom, err := browser.DumpDOM(bin, t.TempDir(), url+"#tab=timeline")
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(dom, `<details class="row kind-x`); n == 0 {
			t.Errorf("the served page shows no exchange in Chromium")
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("view --listen after SIGINT: %v; stderr %s", err, stderr.String())
	}
}
