package main

// Regression tests for issue 8 items 5, 9 and 10 on the offline commands
// and the HTTP tap's flags: real ahp-tap processes, FIFOs and signals.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// mainCmd is `ahp-tap ARGS` with the test binary as ahp-tap.
func mainCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(childBinary, args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	return cmd
}

const unsolicited = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\n"

// TestReplayAndCheckStopOnSignals: replay of a FIFO that never ends and
// check of a file list with such a FIFO stop on SIGTERM/SIGINT, print the
// report of what they had, and exit 143/130 (issue 8 item 5).
func TestReplayAndCheckStopOnSignals(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "stream.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, "done.jsonl")
	os.WriteFile(done, fmt.Appendf(nil, unsolicited, 1), 0o600)
	for _, tc := range []struct {
		args []string
		sig  syscall.Signal
		want int
	}{
		{[]string{"replay", "--direction", "backend", fifo}, syscall.SIGTERM, 143},
		{[]string{"check", done, fifo}, syscall.SIGINT, 130},
	} {
		cmd := mainCmd(tc.args...)
		var stdout, stderr syncBuf
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for the reader
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3000 { // more than the 64 KiB the input probe waits for
			fmt.Fprintf(w, unsolicited, i+2)
		}
		time.Sleep(1500 * time.Millisecond) // let it read the lines; the FIFO stays open
		cmd.Process.Signal(tc.sig)
		waitWithin(t, cmd, 30*time.Second)
		w.Close()
		if code := cmd.ProcessState.ExitCode(); code != tc.want {
			t.Errorf("%v: exit %d (stderr %q), want %d", tc.args, code, stderr.String(), tc.want)
		}
		if !strings.Contains(stdout.String(), "BASE-2") {
			t.Errorf("%v: report %q, want the findings read before the signal", tc.args, stdout.String())
		}
		if !strings.Contains(stderr.String(), "interrupted by") {
			t.Errorf("%v: stderr %q, want the interruption said", tc.args, stderr.String())
		}
	}
}

// TestReplayLongLineBoundedMemory replays a stream whose one line is 300
// MiB (replay /dev/zero in small): the audited prefix is capped as the
// live taps cap it (TAP-1) and memory stays far below the line (issue 8
// item 9).
func TestReplayLongLineBoundedMemory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("300 MiB through a pipe")
	}
	cmd := mainCmd("replay", "-")
	stdin, _ := cmd.StdinPipe()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	chunk := bytes.Repeat([]byte{'0'}, 1<<20)
	for range 300 {
		if _, err := stdin.Write(chunk); err != nil {
			break
		}
	}
	stdin.Write([]byte("\n"))
	stdin.Close()
	waitWithin(t, cmd, 5*time.Minute)
	if code := cmd.ProcessState.ExitCode(); code > 1 {
		t.Fatalf("replay exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "TAP-1") {
		t.Errorf("report %q, want a TAP-1 for the capped line", stdout.String())
	}
	peak := rss(cmd)
	t.Logf("peak RSS replaying a 300 MiB line: %.1f MiB", peak)
	if peak > 160 && !raceEnabled {
		t.Errorf("peak RSS = %.1f MiB, want < 160 MiB for a 300 MiB line", peak)
	}
}

// TestFlagRanges: values that would exhaust memory or make no sense exit
// 2 with a one-line reason, before anything starts (issue 8 item 9).
func TestFlagRanges(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"stdio", "--audit-queue", "2000000000", "--", "true"},
		{"stdio", "--audit-queue", "0", "--", "true"},
		{"stdio", "--max-audit-line", "0", "--", "true"},
		{"stdio", "--max-audit-line", "4000000000", "--", "true"},
		{"stdio", "--drain", "-1s", "--", "true"},
		{"http", "--upstream", "http://127.0.0.1:1", "--max-audit-body", "0"},
		{"http", "--upstream", "http://127.0.0.1:1", "--max-audit-body", "4000000000"},
		{"http", "--upstream", "http://127.0.0.1:1", "--drain", "0s"},
		{"http", "--upstream", "http://127.0.0.1:1", "--upstream-timeout", "1000h"},
	} {
		r := runTap(t, "", args...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("ahp-tap %v: exit %d, stderr %q; want 2 and a one-line reason", args, r.code, r.stderr)
		}
	}
}

// TestHTTPOffLoopbackNeedsAllowRemote: a forward proxy or metrics endpoint
// on every interface is refused without --allow-remote, and warned about
// with it (issue 8 item 10).
func TestHTTPOffLoopbackNeedsAllowRemote(t *testing.T) {
	for _, args := range [][]string{
		{"http", "--forward", "--listen", "0.0.0.0:0"},
		{"http", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--metrics", "0.0.0.0:0"},
	} {
		r := runTap(t, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--allow-remote") {
			t.Errorf("ahp-tap %v: exit %d, stderr %q; want 2 naming --allow-remote", args, r.code, r.stderr)
		}
		cmd := mainCmd(append(args, "--allow-remote")...)
		var stderr syncBuf
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; !strings.Contains(stderr.String(), "listening on") && !strings.Contains(stderr.String(), "forward proxy on"); i++ {
			if i == 3000 {
				cmd.Process.Kill()
				t.Fatalf("ahp-tap %v --allow-remote did not start: %q", args, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		waitWithin(t, cmd, 30*time.Second)
		if !strings.Contains(stderr.String(), "WARNING") {
			t.Errorf("ahp-tap %v --allow-remote: stderr %q, want a loud warning", args, stderr.String())
		}
	}
}

// TestHTTPSecondSignalExitsAtOnce: with a request held by an upstream
// that never answers and a long --drain, the first SIGTERM starts the
// drain and a second one exits at once (issue 8 item 5).
func TestHTTPSecondSignalExitsAtOnce(t *testing.T) {
	ln := hangingUpstream(t)
	cmd := mainCmd("http", "--upstream", "http://"+ln, "--listen", "127.0.0.1:0", "--drain", "1h", "--upstream-timeout", "1h")
	var stderr syncBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := waitListening(t, cmd, &stderr)
	go func() {
		resp, err := httpPost("http://"+addr+"/", "{}")
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
}

// hangingUpstream is a TCP server that reads requests and never answers.
// It returns its address.
func hangingUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go io.Copy(io.Discard, c)
		}
	}()
	return ln.Addr().String()
}

var listeningRE = regexp.MustCompile(`listening on http://([0-9.:]+)`)

// waitListening waits for the HTTP tap's "listening on" line and returns
// the address.
func waitListening(t *testing.T, cmd *exec.Cmd, stderr *syncBuf) string {
	t.Helper()
	for i := 0; ; i++ {
		if m := listeningRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		if i == 3000 {
			cmd.Process.Kill()
			t.Fatalf("ahp-tap did not start: %q", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func httpPost(url, body string) (*http.Response, error) {
	c := &http.Client{Timeout: time.Minute}
	return c.Post(url, "application/json", strings.NewReader(body))
}

// peaks holds the sampled peak RSS of the processes started by the faults,
// by pid. rusage's ru_maxrss cannot be used: a child forked (vfork) from
// this test process inherits its high-water mark across exec, and this
// process holds the 200 MiB inputs.
var peaks sync.Map // pid -> *atomic.Int64 (KiB)

// sampleRSS follows the high-water RSS (VmHWM, per address space, so it
// starts afresh at exec) of a started process until it exits.
func sampleRSS(cmd *exec.Cmd) {
	v := new(atomic.Int64)
	peaks.Store(cmd.Process.Pid, v)
	path := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
	go func() {
		for {
			data, err := os.ReadFile(path)
			if err != nil {
				return
			}
			for _, l := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(l, "VmHWM:") {
					if f := strings.Fields(l); len(f) > 1 {
						kb, _ := strconv.ParseInt(f[1], 10, 64)
						if kb > v.Load() {
							v.Store(kb)
						}
					}
				}
			}
			if strings.Contains(string(data), "State:\tZ") {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

// rss returns the sampled peak RSS of a process in MiB.
func rss(cmd *exec.Cmd) float64 {
	if v, ok := peaks.Load(cmd.Process.Pid); ok {
		return float64(v.(*atomic.Int64).Load()) / 1024
	}
	return 0
}

// fault logs one line of figures for RELIABILITY.md.
func fault(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf("FAULT %s: ", t.Name()) + fmt.Sprintf(format, args...)
	t.Log(line)
	if p := os.Getenv("FAULTS_OUT"); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// TestHTTPStderrNotReadDoesNotHoldRequests: every request fails upstream
// and is a diagnostic on a stderr nobody reads; requests used to hang
// after a few hundred (issue 8 item 8). All must be answered.
func TestHTTPStderrNotReadDoesNotHoldRequests(t *testing.T) {
	// Every request fails upstream (refused) and each failure is a
	// diagnostic on stderr, which nobody reads (issue 8 item 8).
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	cmd := mainCmd("http", "--listen", "127.0.0.1:0", "--upstream", "http://"+dead, "-v")
	r, w, _ := os.Pipe()
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); r.Close() })
	br := bufio.NewReader(r)
	var addr string
	for addr == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if m := listeningRE.FindStringSubmatch(line); m != nil {
			addr = m[1]
		}
	}
	// From here stderr is not read.
	c := &http.Client{Timeout: 30 * time.Second}
	for i := range 1500 {
		code, _, err := post(t, c, "http://"+addr+"/", interceptReq)
		if err != nil || code != 502 {
			t.Fatalf("request %d with stderr not read: %d %v, want 502", i, code, err)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitWithin(t, cmd, time.Minute)
	fault(t, "1,500 failing requests with -v and stderr not read: all answered 502, exit %d, peak RSS %.1f MiB", cmd.ProcessState.ExitCode(), rss(cmd))
}

func post(t *testing.T, c *http.Client, url, body string) (int, []byte, error) {
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

const interceptReq = `{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","params":{"protocolVersion":"draft"}}`
