package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const tailFinding = `{"level":"warn","time":"2026-12-02T09:31:59Z","check":"STDIO-9","requirement":"","rule":"STDIO-9/x","pointer":"","message":"%s"}` + "\n"

// tail reads a 64 MiB line once, without keeping it: the finding after it
// is printed, the long line is skipped with one stderr line, and memory
// stays far below the line (issue 28 item 18: it re-copied the line on
// every read, 4.9 s and 358 MB).
func TestTailLongLineBounded(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "long.log", "")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{'x'}, 1<<20)
	for range 64 {
		f.Write(chunk)
	}
	f.WriteString("\n" + strings.Replace(tailFinding, "%s", "after the long line", 1))
	f.Close()

	cmd := exec.Command(tapBinary, "tail", path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	waitWithin(t, cmd, 2*time.Minute)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("tail: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "after the long line") {
		t.Errorf("tail stdout %q, want the finding after the long line", stdout.String())
	}
	if n := strings.Count(stderr.String(), "\n"); n != 1 || !strings.Contains(stderr.String(), path+":1: a line longer than 1 MiB") {
		t.Errorf("tail stderr %q, want one line about line 1", stderr.String())
	}
	peak := rss(cmd)
	t.Logf("peak RSS of tail over a 64 MiB line: %.1f MiB", peak)
	if peak > 48 && !raceEnabled {
		t.Errorf("peak RSS = %.1f MiB, want < 48 MiB for a 64 MiB line", peak)
	}
}

// tail -f notices a log truncated under it (logrotate's copytruncate),
// says so, and prints what is written from the start again (issue 28 item
// 18: it never printed anything again).
func TestTailFollowsTruncatedLog(t *testing.T) {
	t.Parallel()
	var first strings.Builder
	for i := range 20 {
		first.WriteString(strings.Replace(tailFinding, "%s", "before rotation "+strings.Repeat("x", i), 1))
	}
	path := writeFile(t, "rot.log", first.String())
	cmd := exec.Command(tapBinary, "tail", "-f", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuf
	cmd.Stderr = &stderr
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
	waitLine := func(want string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("tail -f ended; stderr %q", stderr.String())
				}
				if strings.Contains(l, want) {
					return
				}
			case <-deadline:
				t.Fatalf("tail -f never printed %q; stderr %q", want, stderr.String())
			}
		}
	}
	waitLine("before rotation " + strings.Repeat("x", 19))
	// copytruncate: the file is emptied in place; the writer goes on
	// appending to it.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Replace(tailFinding, "%s", "after rotation", 1))
	f.Close()
	waitLine("after rotation")
	// stderr is copied by another goroutine: give it the time to arrive.
	for end := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "the file shrank") && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "the file shrank") {
		t.Errorf("stderr %q, want the truncation said", stderr.String())
	}
}
