package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// --console prints findings as readable lines on stderr, beside the
// backend's own; the summary says where findings went (issue 15 item 6).
func TestStdioConsole(t *testing.T) {
	t.Parallel()
	cmd := tapCmd([]string{"--console", "--summary"}, "answer", `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"v0","effects":[]}}`)
	cmd.Stdin = strings.NewReader(exampleLines(t, "\n", 1))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "ahp-tap ▸ stdio:") || !strings.Contains(stderr.String(), "sent by backend: error BASE-2 at /result/protocolVersion") {
		t.Errorf("no readable finding on stderr:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "\x1b[") {
		t.Errorf("colour on a pipe:\n%q", stderr.String())
	}
	if !strings.Contains(stderr.String(), "findings written to standard error (--console)") {
		t.Errorf("the summary does not say where findings went:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), `"check":`) {
		t.Errorf("JSON on stderr with --console alone:\n%s", stderr.String())
	}
}

func TestConsoleColour(t *testing.T) {
	f := tap.Finding{Check: "BASE-2", Level: tap.Error, Seq: 4, Dir: tap.FromBackend, Binds: tap.FromBackend, Message: "m"}
	if got := report.ConsoleLine(f, true); !strings.Contains(got, "\x1b[1;31merror\x1b[0m BASE-2") {
		t.Errorf("ConsoleLine(colour) = %q", got)
	}
	if got := report.ConsoleLine(f, false); got != "ahp-tap ▸ #4 sent by backend: error BASE-2: m\n" {
		t.Errorf("ConsoleLine = %q", got)
	}
	t.Setenv("NO_COLOR", "1")
	if report.UseColour(os.Stderr) {
		t.Error("colour with NO_COLOR set")
	}
}

// tail pretty-prints a violation log, filters it, and follows it with -f.
func TestTail(t *testing.T) {
	t.Parallel()
	logPath := writeFile(t, "v.log", "")
	if r := runTap(t, "", "replay", "--log", logPath, exampleCapture); r.code != 1 {
		t.Fatalf("replay: exit %d %s", r.code, r.stderr)
	}
	r := runTap(t, "", "tail", logPath)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 5 || !strings.Contains(r.stdout, "#8 sent by harness: error CORR-2 (binds the backend) at /id") {
		t.Errorf("tail: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	if strings.Contains(r.stdout, "{") {
		t.Errorf("tail printed JSON:\n%s", r.stdout)
	}
	r = runTap(t, "", "tail", "--check", "CORR", "--level", "error", logPath)
	// CORR-2 at error; the capture's late answer (CORR-3) is a warning.
	if n := strings.Count(r.stdout, "\n"); n != 1 || strings.Contains(r.stdout, "BASE-") {
		t.Errorf("tail --check CORR: %d lines:\n%s", n, r.stdout)
	}
	r = runTap(t, "", "tail", "--event-type", "tool.before", logPath)
	if n := strings.Count(r.stdout, "\n"); n != 1 || !strings.Contains(r.stdout, "CORR-2") {
		t.Errorf("tail --event-type tool.before: %d lines:\n%s", n, r.stdout)
	}
	if r := runTap(t, "", "tail", exampleCapture); r.code != 2 || !strings.Contains(r.stderr, "is a capture, not a violation log: re-check it with 'ahp-tap replay") {
		t.Errorf("tail of a capture: exit %d, stderr %q", r.code, r.stderr)
	}

	// -f: a finding appended later is printed.
	cmd := exec.Command(tapBinary, "tail", "-f", logPath)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"level":"warn","time":"2026-12-02T09:31:59Z","check":"STDIO-9","requirement":"","rule":"STDIO-9/x","pointer":"","message":"appended later"}` + "\n")
	f.Close()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("tail -f ended")
			}
			if strings.Contains(l, "appended later") {
				return
			}
		case <-deadline:
			t.Fatal("tail -f never printed the appended finding")
		}
	}
}

// A request longer than --max-audit-line is audited as a prefix (TAP-1)
// and its answer pairs with it: no CORR-2 about traffic the tap did not
// see (issue 15 item 1, end to end).
func TestStdioTruncatedRequestNoFalseCorr2(t *testing.T) {
	t.Parallel()
	req := exampleLines(t, "\n", 1)
	if len(req) < 400 {
		t.Fatalf("request of %d bytes is too short for the test", len(req))
	}
	logPath := writeFile(t, "v.log", "")
	cmd := raceTapCmd([]string{"--max-audit-line", "300", "--log", logPath, "--summary=false"}, "answer",
		`{"jsonrpc":"2.0","id":"evt-1","result":{"protocolVersion":"draft","effects":[]}}`)
	cmd.Stdin = strings.NewReader(req + req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	logData, _ := os.ReadFile(logPath)
	if !strings.Contains(string(logData), `"check":"TAP-1"`) {
		t.Errorf("no TAP-1 for the truncated request:\n%s", logData)
	}
	for _, line := range strings.Split(string(logData), "\n") {
		if strings.Contains(line, `"check":"CORR-2"`) && strings.Contains(line, `"level":"error"`) {
			t.Errorf("false CORR-2: %s", line)
		}
	}
}
