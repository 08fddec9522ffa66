package main

import (
	"bufio"
	"encoding/json"
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

	"github.com/ahp-tap/ahp-tap/internal/browser"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

// liveRequest is a tool.before intercept with id.
func liveRequest(id string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
		`","source":"urn:uuid:0d8c6a52-3f0e-4d8e-9b1a-2f6b9a7c1e01","type":"tool.before","time":"2026-08-24T08:51:14Z",` +
		`"harness":{"name":"h","version":"1"},"session":{"id":"s1","cwd":"/w"},"tool":{"name":"Bash","kind":"shell","input":{"command":"live-` + id +
		`"},"origin":"native"},"call":{"id":"c-` + id + `"},"path":"main"},"capabilities":{"effects":["deny"]}}}`
}

// Issue 24 item 2: 'ahp-tap http --ui' serves the live view. In a real
// browser, while a real tap runs: an exchange appears as it happens, a
// finding (BASE-2) appears on the exchange that violates and not before,
// a pending exchange counts down to its deadline, and CORR-3 appears the
// moment the deadline passes, before the backend answers.
func TestHTTPLiveViewInBrowser(t *testing.T) {
	e2e.Only(t) // a browser case (a Chromium start is ~2 CPU-s): CI runs it
	bin := browser.Find()
	if bin == "" {
		t.Skip("no chromium on PATH: the live view is not checked in a browser")
	}
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		id, version := "ok", "draft"
		switch {
		case strings.Contains(string(b), `"id":"bad"`):
			id, version = "bad", "2025-06"
		case strings.Contains(string(b), `"id":"slow"`):
			id = "slow"
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"`+id+`","result":{"protocolVersion":"`+version+`","effects":[{"type":"deny","reason":"no `+id+`"}]}}`)
	}))
	defer up.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	lt := startHTTPTap(t, "--upstream", up.URL, "--ui", "127.0.0.1:0", "--timeout", "1s")
	ui := lt.waitFor(t, "live view on", "http://")
	addr := lt.waitFor(t, "listening on", "http://")
	post := func(id string) {
		resp, err := http.Post("http://"+addr+"/agent-hooks", "application/json", strings.NewReader(liveRequest(id)))
		if err != nil {
			t.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	b, err := browser.Start(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Navigate("http://" + ui + "/#tab=timeline"); err != nil {
		t.Fatal(err)
	}
	wait := func(what, expr string) {
		t.Helper()
		ok, err := b.WaitFor(expr, time.Minute)
		if err != nil || !ok {
			dom, _ := b.DOM()
			i := strings.Index(dom, `id="live-status"`)
			t.Fatalf("the live view never showed %s (%v):\n%.3000s", what, err, dom[max(i, 0):])
		}
	}
	rows := `document.querySelectorAll("details.row.kind-x")`
	badge := func(check string) string {
		return `Array.prototype.some.call(document.querySelectorAll(".badge"), function (b) { return b.textContent.indexOf("` + check + `") === 0; })`
	}
	wait("the connection", `document.getElementById("live-status").textContent.indexOf("live ·") === 0`)

	// A conforming exchange appears, with its answer, and no BASE-2.
	post("ok")
	wait("the first exchange", rows+`.length === 1 && `+rows+`[0].textContent.indexOf("live-ok") >= 0 && `+rows+`[0].textContent.indexOf("explicit_deny") >= 0`)
	if v, _ := b.Eval(badge("BASE-2")); string(v) != "false" {
		t.Error("a BASE-2 badge before any violating exchange")
	}
	// The violating one: its finding appears while the tap runs.
	post("bad")
	wait("the BASE-2 finding", badge("BASE-2"))

	// A request the backend holds: pending, counting down, then CORR-3 at
	// the deadline, while the backend still has not answered.
	done := make(chan struct{})
	go func() { defer close(done); post("slow") }()
	wait("the pending exchange's countdown", `document.querySelector("span.countdown") !== null`)
	wait("CORR-3 at the deadline", badge("CORR-3"))
	select {
	case <-done:
		t.Fatal("the slow exchange was answered before CORR-3 was seen")
	default:
	}
	close(release)
	<-done

	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	if err := lt.cmd.Wait(); err != nil {
		t.Errorf("http --ui after SIGTERM: %v\n%s", err, lt.stderrText())
	}
}

// --ui off loopback is refused without --allow-remote (exit 2).
func TestHTTPUIRemoteRefused(t *testing.T) {
	t.Parallel()
	r := runTap(t, "", "http", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--ui", "0.0.0.0:0")
	if r.code != 2 || !strings.Contains(r.stderr, "--ui") || !strings.Contains(r.stderr, "--allow-remote") {
		t.Errorf("http --ui 0.0.0.0:0: exit %d, stderr %q; want 2 naming --allow-remote", r.code, r.stderr)
	}
	// stdio refuses it before the backend starts (the audit process would listen).
	marker := filepath.Join(t.TempDir(), "started")
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:80", "127.0.0.1:notaport"} {
		r := runTap(t, "", "stdio", "--ui", addr, "--", "touch", marker)
		if r.code != 2 || !strings.Contains(r.stderr, "--ui") {
			t.Errorf("stdio --ui %s: exit %d, stderr %q; want 2", addr, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the backend started although --ui was refused")
	}
	// A loopback address is taken.
	if r := runTap(t, "", "stdio", "--ui", "127.0.0.1:0", "--", "true"); r.code != 0 {
		t.Errorf("stdio --ui 127.0.0.1:0 -- true: exit %d, stderr %q", r.code, r.stderr)
	}
}

// 'ahp-tap stdio --ui' serves the live view from the audit process: in a
// real browser, an exchange the harness sends appears with its answer
// while the tap runs, and a finding (EVT-1: the event lacks required
// fields) appears with it.
func TestStdioLiveViewInBrowser(t *testing.T) {
	e2e.Only(t) // a browser case (a Chromium start is ~2 CPU-s): CI runs it
	bin := browser.Find()
	if bin == "" {
		t.Skip("no chromium on PATH: the live view is not checked in a browser")
	}
	cmd := exec.Command(tapBinary, "stdio", "--ui", "127.0.0.1:0", "--", tapBinary, "example-backend")
	stdin, ui, stderr := startUI(t, cmd, "the stdio tap never served its live view")
	b, err := browser.Start(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Navigate(ui + "#tab=timeline"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.WaitFor(`document.getElementById("live-status").textContent.indexOf("live ·") === 0`, time.Minute); !ok || err != nil {
		t.Fatalf("the live view did not connect: %v", err)
	}
	if v, _ := b.Eval(`document.querySelectorAll("details.row.kind-x").length`); string(v) != "0" {
		t.Errorf("%s exchanges before the harness sent any", v)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":"a1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"a1","type":"tool.before","tool":{"name":"Bash","input":{"command":"stdio-live"}}},"capabilities":{"effects":["deny"]}}}`+"\n")
	ok, err := b.WaitFor(`Array.prototype.some.call(document.querySelectorAll("details.row.kind-x"), function (r) {
		return r.textContent.indexOf("stdio-live") >= 0 && r.textContent.indexOf("no_effect") >= 0 && r.textContent.indexOf("EVT-1") >= 0; })`, time.Minute)
	if err != nil || !ok {
		dom, _ := b.DOM()
		i := strings.Index(dom, `id="live-status"`)
		t.Fatalf("the exchange and its finding never appeared (%v):\n%.3000s", err, dom[max(i, 0):])
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("stdio --ui: %v\n%s", err, stderr.String())
	}
}

// 'ahp-tap mock backend --ui' serves the live view of the traffic it
// audits: a recorded request sent to the mock shows up on the event
// stream as a frame and an exchange with its answer.
func TestMockLiveView(t *testing.T) {
	t.Parallel()
	capPath, _ := recordSession(t, "demo")
	data, err := os.ReadFile(capPath)
	if err != nil {
		t.Fatal(err)
	}
	var request string
	for line := range strings.Lines(string(data)) {
		var r struct{ Type, Direction, Raw string }
		if json.Unmarshal([]byte(line), &r) == nil && r.Type == "frame" && r.Direction == "harness" && strings.Contains(r.Raw, "hooks/intercept") {
			request = r.Raw
			break
		}
	}
	if request == "" {
		t.Fatal("no recorded intercept")
	}
	cmd := exec.Command(tapBinary, "mock", "backend", "--stdio", "--quiet", "--ui", "127.0.0.1:0", capPath)
	stdin, ui, _ := startUI(t, cmd, "mock --ui never served")
	// Bounded, so that a view that never shows the exchange fails the
	// test rather than hangs it.
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Get(ui + "events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.WriteString(stdin, request+"\n")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	frames := 0
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct {
			T string
			V struct {
				K  string
				Rs uint64
			}
		}
		json.Unmarshal([]byte(line), &m)
		if m.T == "frame" {
			frames++
		}
		if m.T == "exchange" && m.V.Rs != 0 {
			break
		}
	}
	if frames < 2 {
		t.Errorf("the live view saw %d frames before the answered exchange, want the request and the answer", frames)
	}
	stdin.Close()
	cmd.Wait()
}

// Issue 24 item 2: per_event stdio taps sharing --state have one live
// view, served by their shared audit process: a viewer sees the
// exchanges of every event's process (one connection each) on one stream.
func TestStdioLiveViewSharedAudit(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	state := t.TempDir()
	// The viewer connects as soon as the shared audit process listens and
	// reads until it ends (2 s after the last event); the ring holds what
	// came before it connected.
	conns := map[string]bool{}
	read := make(chan error, 1)
	go func() {
		c := &http.Client{Timeout: 2 * time.Minute}
		var resp *http.Response
		var err error
		for i := 0; i < 6000; i++ {
			if resp, err = c.Get("http://" + addr + "/events"); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			read <- err
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m struct {
				T string
				V struct{ Conn, K string }
			}
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(line), &m) == nil && m.T == "frame" && m.V.K == "request" {
				conns[m.V.Conn] = true
			}
		}
		read <- nil
	}()
	cmd := exec.Command(tapBinary, "example-harness", "--lifecycle", "per_event", "--", tapBinary, "stdio",
		"--registration", "../../examples/hooks.json", "--hook", "com.example.review-per-event", "--state", state,
		"--ui", addr, "--", tapBinary, "example-backend")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("per_event session: %v\n%s", err, out)
	}
	if err := <-read; err != nil {
		t.Fatalf("the viewer never reached the shared audit process's live view: %v", err)
	}
	if len(conns) < 3 {
		t.Errorf("the live view showed requests of %d processes %v, want every event's", len(conns), conns)
	}
}

// startUI starts cmd (a stdio peer with --ui, its stdout discarded) and
// returns its stdin, the live view's URL once it says where it serves,
// and its stderr; never means it did not within 30 s. cmd is killed when
// the test ends.
func startUI(t *testing.T, cmd *exec.Cmd, never string) (io.WriteCloser, string, *syncBuf) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	for i := 0; ; i++ {
		if m := regexp.MustCompile(`live view on (http://[0-9.:]+/)`).FindStringSubmatch(stderr.String()); m != nil {
			return stdin, m[1], stderr
		} else if i == 3000 {
			t.Fatalf("%s; stderr %q", never, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
