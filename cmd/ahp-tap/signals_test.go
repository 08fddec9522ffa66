package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func init() {
	// slowtrap prints "ready"; on SIGTERM it takes 300ms to clean up,
	// prints "got terminated" and exits 7.
	helpers["slowtrap"] = func([]string) int {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready")
		<-c
		time.Sleep(300 * time.Millisecond)
		fmt.Println("got terminated")
		return 7
	}
}

// lastNoteKind is the kind of the capture's last record when it is a note
// ("" otherwise): "end" for a capture whose tap closed it.
func lastNoteKind(t *testing.T, path string) string {
	t.Helper()
	kinds, _ := captureNotes(t, path)
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(kinds) == 0 || !strings.Contains(lines[len(lines)-1], `"type":"note"`) {
		return ""
	}
	return kinds[len(kinds)-1]
}

// TestHTTPDoubleSignalIsOneRequest (issue 21 item 10): GNU `timeout N
// ahp-tap http …` sends SIGTERM to the tap and then to its process group,
// microseconds apart. That is one request to stop: the tap drains, closes
// the log and writes the capture's end record, and exits as after one
// signal (0; timeout(1) itself then exits 124), every run.
// Before: the second signal was taken as "exit now", and about half the
// runs left a capture without its end record (replay: cut off). The last
// run goes through the real timeout(1).
func TestHTTPDoubleSignalIsOneRequest(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		// In flight when the signals come: the shutdown waits for it
		// (timeout(1) signals after 1 s: /long is answered after that).
		d := 500 * time.Millisecond
		if r.URL.Path == "/long" {
			d = 1500 * time.Millisecond
		}
		time.Sleep(d)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"d1","result":{"protocolVersion":"draft","effects":[]}}`)
	}))
	defer up.Close()
	timeoutBin, _ := exec.LookPath("timeout")
	for run := range 5 {
		viaTimeout := run == 4 && timeoutBin != ""
		dir := t.TempDir()
		logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "c.jsonl")
		args := []string{"http", "--upstream", up.URL, "--listen", "127.0.0.1:0", "--log", logPath, "--capture", capPath}
		var cmd *exec.Cmd
		if viaTimeout {
			cmd = exec.Command(timeoutBin, append([]string{"-s", "TERM", "1", tapBinary}, args...)...)
		} else {
			cmd = exec.Command(tapBinary, args...)
		}
		var stderr syncBuf
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		addr := waitListening(t, cmd, &stderr)
		answered := make(chan error, 1)
		go func() {
			path := "/agent-hooks"
			if viaTimeout {
				path = "/long"
			}
			resp, err := httpPost("http://"+addr+path, intercept("d1", "ls"))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			answered <- err
		}()
		time.Sleep(200 * time.Millisecond) // the request is in flight
		if !viaTimeout {
			// A few milliseconds apart, so that the kernel delivers two
			// signals rather than merging the second into the first
			// while it is pending (which hid the fault in half the runs).
			syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
			time.Sleep(5 * time.Millisecond)
			syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		}
		waitWithin(t, cmd, 30*time.Second)
		if err := <-answered; err != nil {
			t.Errorf("run %d: the request in flight was cut: %v", run, err)
		}
		want := 0 // one request to stop: a clean shutdown
		if viaTimeout {
			want = 124
		}
		if code := cmd.ProcessState.ExitCode(); code != want {
			t.Errorf("run %d: exit %d, want %d; stderr %q", run, code, want, stderr.String())
		}
		if strings.Contains(stderr.String(), "again") {
			t.Errorf("run %d: two signals microseconds apart were taken as two requests: %q", run, stderr.String())
		}
		if k := lastNoteKind(t, capPath); k != "end" {
			t.Errorf("run %d: the capture's last record is %q, want the end record", run, k)
		}
		if r := runTap(t, "", "replay", "--fail-on", "never", capPath); strings.Contains(r.stdout+r.stderr, "cut off") {
			t.Errorf("run %d: replay says the capture was cut off:\n%s%s", run, r.stdout, r.stderr)
		}
	}
}

// TestHTTPForcedExitStillEndsCapture (issue 21 item 10): a second SIGTERM
// well after the first (a real "exit now") with a request held by an
// upstream that never answers and --drain 1h: the tap exits at once (143)
// and still writes the capture's end record and the log within its bound.
// Before: os.Exit without closing them.
func TestHTTPForcedExitStillEndsCapture(t *testing.T) {
	ln := hangingUpstream(t)
	dir := t.TempDir()
	logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "c.jsonl")
	cmd := mainCmd("http", "--upstream", "http://"+ln, "--listen", "127.0.0.1:0", "--drain", "1h", "--upstream-timeout", "1h",
		"--timeout", "100ms", "--log", logPath, "--capture", capPath)
	var stderr syncBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := waitListening(t, cmd, &stderr)
	go func() {
		resp, err := httpPost("http://"+addr+"/agent-hooks", intercept("f1", "ls"))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	time.Sleep(300 * time.Millisecond) // the request reaches the upstream and hangs there
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	waitWithin(t, cmd, 30*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Errorf("exit %d after two SIGTERMs, want 143; stderr %q", code, stderr.String())
	}
	if k := lastNoteKind(t, capPath); k != "end" {
		t.Errorf("the capture's last record is %q, want the end record; stderr %q", k, stderr.String())
	}
	if fs := logFindings(t, logPath); len(ofCheck(fs, "CORR-3")) != 1 {
		t.Errorf("log %v, want the held request's CORR-3 (its 100ms deadline passed)", fs)
	}
}

// TestStdioDoubleSignalIsOneRequest (issue 21 item 10, stdio): two
// SIGTERMs microseconds apart reach the backend as one SIGTERM, which it
// handles (exit 7); the tap exits with its status and the capture is
// complete. Before: the second was taken as "kill the group now".
func TestStdioDoubleSignalIsOneRequest(t *testing.T) {
	dir := t.TempDir()
	capPath := filepath.Join(dir, "c.jsonl")
	cmd := exec.Command(tapBinary, "stdio", "--capture", capPath, "--summary=false", "--", childBinary, "helper", "slowtrap")
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var stderr syncBuf
	cmd.Stderr = &stderr
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stdout)
	if l, err := br.ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("backend said %q, %v", l, err)
	}
	syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	time.Sleep(5 * time.Millisecond) // two signals, not one merged by the kernel
	syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	rest, _ := io.ReadAll(br)
	waitWithin(t, cmd, 30*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 7 || !strings.Contains(string(rest), "got terminated") {
		t.Errorf("exit %d, backend output %q: want the backend's own SIGTERM handling (exit 7); stderr %q", code, rest, stderr.String())
	}
	if k := lastNoteKind(t, capPath); k != "end" {
		t.Errorf("the capture's last record is %q, want the end record", k)
	}
}
