package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutputThatIsAnInputRefused checks that a --report, --write-baseline
// or --log file that is one of the inputs, under another name (a hard
// link), is refused before anything is opened: exit 2, one line, the input
// unchanged (issue 28 item 10).
func TestOutputThatIsAnInputRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, _ := os.ReadFile(exampleCapture)
	input := filepath.Join(dir, "session.capture")
	os.WriteFile(input, src, 0o600)
	alias := filepath.Join(dir, "alias.json")
	if err := os.Link(input, alias); err != nil {
		t.Skip(err)
	}
	reg := filepath.Join(dir, "hooks.json")
	os.WriteFile(reg, []byte(verdictRegistration("http://127.0.0.1:1/agent-hooks")), 0o600)
	regAlias := filepath.Join(dir, "reg-alias.json")
	os.Link(reg, regAlias)
	for _, args := range [][]string{
		{"replay", "--report", "json=" + alias, input},
		{"check", "--report", "sarif=" + alias, input},
		{"replay", "--write-baseline", alias, input},
		{"check", "--log", alias, input},
		{"check", "--registration", reg, "--hook", "com.example.s", "--report", "junit=" + regAlias, input},
	} {
		r := runTap(t, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "is the input") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("ahp-tap %v: exit %d, stderr %q; want 2 and one line naming the input", args, r.code, r.stderr)
		}
		if b, _ := os.ReadFile(input); !bytes.Equal(b, src) {
			t.Fatalf("ahp-tap %v changed the input", args)
		}
		if b, _ := os.ReadFile(reg); !strings.Contains(string(b), "com.example.s") {
			t.Fatalf("ahp-tap %v changed the registration", args)
		}
	}
	// Another file is written as usual, and --write-baseline may replace
	// the --baseline it was given.
	base := filepath.Join(dir, "base.json")
	if r := runTap(t, "", "replay", "--write-baseline", base, input); r.code != 1 {
		t.Fatalf("write a baseline: exit %d\n%s", r.code, r.stderr)
	}
	if r := runTap(t, "", "replay", "--baseline", base, "--write-baseline", base, input); r.code != 0 {
		t.Errorf("update the baseline in place: exit %d\n%s", r.code, r.stderr)
	}
}

// TestReportFilesSafe checks the report paths of issue 28 item 16: a FIFO
// at a --report path is refused without blocking, a pre-existing 0644
// report becomes 0600, and GITHUB_STEP_SUMMARY is never written through a
// symbolic link.
func TestReportFilesSafe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "r.sarif")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	if r := runTap(t, "", "replay", "--report", "sarif="+fifo, exampleCapture); r.code != 2 || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("report at a FIFO: exit %d, stderr %q; want 2, not a regular file", r.code, r.stderr)
	}
	if r := runTap(t, "", "replay", "--write-baseline", fifo, exampleCapture); r.code != 2 {
		t.Errorf("baseline at a FIFO: exit %d, stderr %q; want 2", r.code, r.stderr)
	}

	wide := filepath.Join(dir, "r.xml")
	os.WriteFile(wide, []byte("old"), 0o644)
	os.Chmod(wide, 0o644)
	r := runTap(t, "", "replay", "--fail-on", "never", "--report", "junit="+wide, exampleCapture)
	if fi, err := os.Stat(wide); r.code != 0 || err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("pre-existing 0644 report: exit %d, mode %v (%v); want 0600\n%s", r.code, fi.Mode().Perm(), err, r.stderr)
	}
	if !strings.Contains(r.stderr, "changed it to 0600") {
		t.Errorf("the mode change is not said: %q", r.stderr)
	}

	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	link := filepath.Join(dir, "summary.md")
	os.Symlink(target, link)
	r = runTapEnv(t, []string{"GITHUB_STEP_SUMMARY=" + link}, "replay", "--fail-on", "never", "--report", "github", exampleCapture)
	if r.code != 2 || !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("GITHUB_STEP_SUMMARY through a symlink: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	regular := filepath.Join(dir, "summary2.md")
	if r := runTapEnv(t, []string{"GITHUB_STEP_SUMMARY=" + regular}, "replay", "--fail-on", "never", "--report", "github", exampleCapture); r.code != 0 {
		t.Errorf("GITHUB_STEP_SUMMARY a regular file: exit %d\n%s", r.code, r.stderr)
	} else if b, _ := os.ReadFile(regular); !bytes.Contains(b, []byte("BASE-2")) {
		t.Errorf("step summary not written: %q", b)
	}
}

// TestFIFOInputsHonourFirstSIGTERM checks that wrap and tail given a FIFO
// that no one writes do not sit in open(2) past the first SIGTERM: wrap
// refuses it at once (not a regular file), tail ends on the signal.
func TestFIFOInputsHonourFirstSIGTERM(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	if r := runTap(t, "", "wrap", "--dir", dir, "-o", filepath.Join(dir, "out.json"), fifo); r.code != 2 || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("wrap of a FIFO: exit %d, stderr %q; want 2, not a regular file", r.code, r.stderr)
	}
	for _, args := range [][]string{{"tail", fifo}, {"tail", "-f", fifo}} {
		cmd := exec.Command(tapBinary, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Wait until the command is running its handler: the signal is
		// then the first one it sees (a start-up race would only make
		// the test pass for the wrong reason, never fail it).
		time.Sleep(300 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("ahp-tap %v ignored the first SIGTERM while the FIFO waited for a writer; stderr %q", args, stderr.String())
		}
	}
}
