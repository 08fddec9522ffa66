//go:build faults

package main

// The fault suite (issue 8, "Also build"): every fault ahp-tap was attacked
// with, as one test each, run by bench/faults.sh (go test -tags faults).
// Each asserts the bytes forwarded up to the fault are unchanged, the exit
// status is mirrored, the findings are reported, no process is left
// behind, and logs the peak RSS of the ahp-tap process ("FAULT" lines,
// which RELIABILITY.md quotes).

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"os/exec"
)

func init() {
	// catboth copies stdin to stdout and writes args[0] MiB to stderr.
	helpers["stderrflood"] = func(args []string) int {
		n, _ := strconv.Atoi(args[0])
		done := make(chan struct{})
		go func() {
			defer close(done)
			b := bytes.Repeat([]byte("backend diagnostic line, not protocol\n"), 1<<20/38)
			for range n {
				os.Stderr.Write(b)
			}
		}()
		io.Copy(os.Stdout, os.Stdin)
		<-done
		return 0
	}
	// halfkill writes args[0] then kills itself: a crash mid-frame.
	helpers["halfkill"] = func(args []string) int {
		os.Stdout.WriteString(args[0])
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

// children returns the pids whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+2:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && running(n) {
			out = append(out, n)
		}
	}
	return out
}

// noChildrenLeft fails when the test process still has live children
// other than the go tool's (processes ahp-tap left behind are reparented
// to init, so the backend pids are checked by the tests themselves).
func noChildrenLeft(t *testing.T) {
	t.Helper()
	for i := 0; ; i++ {
		kids := children(os.Getpid())
		if len(kids) == 0 {
			return
		}
		if i == 500 {
			t.Errorf("processes left behind: %v", kids)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// roundTrip runs ahp-tap stdio with flags around helper, sends in, and
// returns stdout, stderr and the finished command.
func roundTrip(t *testing.T, flags []string, in io.Reader, helper string, args ...string) (*exec.Cmd, []byte, string) {
	t.Helper()
	cmd := tapCmd(flags, helper, args...)
	cmd.Stdin = in
	var stdout bytes.Buffer
	var stderr syncBuf
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	waitWithin(t, cmd, 10*time.Minute)
	return cmd, stdout.Bytes(), stderr.String()
}

func TestFaultRandomBinaryBothWays(t *testing.T) {
	in := make([]byte, 64<<20)
	rand.Read(in)
	log := filepath.Join(t.TempDir(), "log.jsonl")
	cmd, out, _ := roundTrip(t, []string{"--log", log}, bytes.NewReader(in), "cat")
	if !bytes.Equal(out, in) {
		t.Fatalf("64 MiB of random bytes: %d bytes back, not equal", len(out))
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	data, _ := os.ReadFile(log)
	if !bytes.Contains(data, []byte("STDIO-1")) {
		t.Errorf("no STDIO-1 finding for random binary")
	}
	noChildrenLeft(t)
	fault(t, "64 MiB random binary each way byte-exact, exit 0, findings logged, peak RSS %.1f MiB", rss(cmd))
}

func TestFault200MBLine(t *testing.T) {
	line := bytes.Repeat([]byte(`{"k":"0123456789abcdef"},`), 8<<20) // 200 MiB
	line[len(line)-1] = '\n'
	log := filepath.Join(t.TempDir(), "log.jsonl")
	cmd := tapCmd([]string{"--log", log}, "cat")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	go func() { stdin.Write(line); stdin.Close() }()
	h := sha256.New()
	n, _ := io.Copy(h, stdout)
	waitWithin(t, cmd, 10*time.Minute)
	want := sha256.Sum256(line)
	if n != int64(len(line)) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("forwarded %d bytes, want %d unchanged", n, len(line))
	}
	data, _ := os.ReadFile(log)
	if !bytes.Contains(data, []byte("TAP-1")) {
		t.Errorf("no TAP-1 for the capped line")
	}
	noChildrenLeft(t)
	fault(t, "200 MiB line each way byte-exact, TAP-1 logged, peak RSS %.1f MiB", rss(cmd))
}

func TestFaultMidFrameKill(t *testing.T) {
	half := `{"jsonrpc":"2.0","id":1,"res`
	log := filepath.Join(t.TempDir(), "log.jsonl")
	cmd, out, _ := roundTrip(t, []string{"--log", log}, strings.NewReader(""), "halfkill", half)
	if string(out) != half {
		t.Errorf("forwarded %q, want %q", out, half)
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("ahp-tap ended %v, want killed by SIGKILL as the backend was", cmd.ProcessState)
	}
	data, _ := os.ReadFile(log)
	if !bytes.Contains(data, []byte("SIGKILL")) && !bytes.Contains(data, []byte("STDIO-")) {
		t.Errorf("log %q: want the crash mid-frame reported", data)
	}
	noChildrenLeft(t)
	fault(t, "backend SIGKILLed mid-frame: partial frame forwarded, tap dies of SIGKILL, finding logged, peak RSS %.1f MiB", rss(cmd))
}

func TestFaultStderrFlood(t *testing.T) {
	in := bytes.Repeat([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"hooks/observe\",\"params\":{}}\n"), 10000)
	cmd := tapCmd(nil, "stderrflood", "100")
	cmd.Stdin = bytes.NewReader(in)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	n, _ := io.Copy(io.Discard, stderr)
	waitWithin(t, cmd, 10*time.Minute)
	if !bytes.Equal(stdout.Bytes(), in) {
		t.Errorf("stdout: %d bytes, want the %d sent", stdout.Len(), len(in))
	}
	if n < 100*(1<<20/38)*38 {
		t.Errorf("stderr: %d bytes, want the backend's 100 MiB", n)
	}
	noChildrenLeft(t)
	fault(t, "backend writes 100 MiB to stderr: all %d bytes passed, stdout byte-exact, peak RSS %.1f MiB", n, rss(cmd))
}

func TestFaultStderrNotReadWithLogDash(t *testing.T) {
	var in []byte
	for i := range 20000 {
		in = fmt.Appendf(in, unsolicited, i)
	}
	cmd := tapCmd([]string{"--log", "-", "--drain", "1s"}, "cat")
	cmd.Stdin = bytes.NewReader(in)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	r, w, _ := os.Pipe()
	defer r.Close()
	cmd.Stderr = w
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	w.Close()
	waitWithin(t, cmd, 2*time.Minute)
	if !bytes.Equal(stdout.Bytes(), in) || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("forwarded %d of %d bytes, exit %d", stdout.Len(), len(in), cmd.ProcessState.ExitCode())
	}
	noChildrenLeft(t)
	fault(t, "120,000 findings to a stderr nobody reads: byte-exact, exit 0 after %.1fs, peak RSS %.1f MiB", time.Since(start).Seconds(), rss(cmd))
}

func TestFaultSetsidDescendantHoldsStdout(t *testing.T) {
	cmd := tapCmd([]string{"--drain", "1s"}, "setsidholder")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stdin = strings.NewReader("")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	defer syscall.Kill(pid, syscall.SIGKILL)
	waitWithin(t, cmd, time.Minute)
	if cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("exit %d, want 0", cmd.ProcessState.ExitCode())
	}
	fault(t, "setsid'd grandchild holds stdout: exit 0 after %.1fs (--drain 1s), peak RSS %.1f MiB", time.Since(start).Seconds(), rss(cmd))
}

func TestFaultFIFOsAndLinksAtLogAndCapture(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(filepath.Join(dir, "target"), link)
	in := []byte("{\"jsonrpc\":\"2.0\",\"method\":\"hooks/observe\",\"params\":{}}\n")
	cmd, out, stderr := roundTrip(t, []string{"--log", fifo, "--capture", link}, bytes.NewReader(in), "cat")
	if !bytes.Equal(out, in) || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("forwarded %q exit %d", out, cmd.ProcessState.ExitCode())
	}
	if !strings.Contains(stderr, "not a regular file") || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("stderr %q: want both refusals", stderr)
	}
	if _, err := os.Lstat(filepath.Join(dir, "target")); err == nil {
		t.Errorf("the dangling link's target was created")
	}
	noChildrenLeft(t)
	fault(t, "FIFO at --log, dangling link at --capture: refused without blocking, traffic byte-exact, peak RSS %.1f MiB", rss(cmd))
}

func TestFaultTapSIGKILLed(t *testing.T) {
	cmd := tapCmd(nil, "groupspawner")
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	for i := 0; running(pid); i++ {
		if i == 1000 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d survived", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fault(t, "ahp-tap SIGKILLed: backend and its child in the group are gone")
}

// upstreamAHP answers every POST with a conforming-enough JSON-RPC result.
func upstreamAHP(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"draft","effects":[]}}`)
		}
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// startTap starts ahp-tap http with args and returns it and its address.
func startTap(t *testing.T, stderr io.Writer, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := mainCmd(append([]string{"http", "--listen", "127.0.0.1:0"}, args...)...)
	var sb syncBuf
	cmd.Stderr = io.MultiWriter(&sb, stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, waitListening(t, cmd, &sb)
}

func TestFaultHTTPConcurrentClients(t *testing.T) {
	n := 1000
	if v, _ := strconv.Atoi(os.Getenv("FAULTS_CLIENTS")); v > 0 {
		n = v
	}
	up := upstreamAHP(t, nil)
	cmd, addr := startTap(t, io.Discard, "--upstream", up.URL)
	var ok, bad atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{}}
			code, body, err := post(t, c, "http://"+addr+"/", interceptReq)
			if err == nil && code == 200 && bytes.Contains(body, []byte(`"effects":[]`)) {
				ok.Add(1)
			} else {
				bad.Add(1)
			}
		}()
	}
	wg.Wait()
	cmd.Process.Signal(syscall.SIGTERM)
	waitWithin(t, cmd, time.Minute)
	if bad.Load() > 0 || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("%d of %d clients failed, exit %d", bad.Load(), n, cmd.ProcessState.ExitCode())
	}
	fault(t, "%d concurrent clients, one connection each: %d answered unchanged, exit 0, peak RSS %.1f MiB", n, ok.Load(), rss(cmd))
}

func TestFaultHTTPSlowloris(t *testing.T) {
	up := upstreamAHP(t, nil)
	cmd, addr := startTap(t, io.Discard, "--upstream", up.URL)
	var conns []net.Conn
	for range 200 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\n")) // and never the rest
		conns = append(conns, c)
	}
	c := &http.Client{Timeout: time.Minute}
	for range 50 {
		code, _, err := post(t, c, "http://"+addr+"/", interceptReq)
		if err != nil || code != 200 {
			t.Fatalf("with 200 slowloris connections open, a request got %d %v", code, err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitWithin(t, cmd, time.Minute)
	fault(t, "200 slowloris connections held open: 50 requests beside them answered, exit %d, peak RSS %.1f MiB", cmd.ProcessState.ExitCode(), rss(cmd))
}

func TestFaultHTTPUpstreamResetsAndHangs(t *testing.T) {
	var reset atomic.Bool
	up := upstreamAHP(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if reset.Load() {
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			c.(*net.TCPConn).SetLinger(0)
			c.Close() // RST
			return
		}
		<-r.Context().Done() // hang until the tap gives up (its --upstream-timeout answers)
	})
	log := filepath.Join(t.TempDir(), "log.jsonl")
	cmd, addr := startTap(t, io.Discard, "--upstream", up.URL, "--upstream-timeout", "500ms", "--log", log)
	c := &http.Client{Timeout: time.Minute}
	code, _, _ := post(t, c, "http://"+addr+"/", interceptReq)
	if code != 504 {
		t.Errorf("hanging upstream: status %d, want 504", code)
	}
	reset.Store(true)
	code, _, _ = post(t, c, "http://"+addr+"/", interceptReq)
	if code != 502 {
		t.Errorf("resetting upstream: status %d, want 502", code)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitWithin(t, cmd, time.Minute)
	data, _ := os.ReadFile(log)
	fault(t, "upstream hangs: 504; upstream resets: 502; exit %d; %d log records; peak RSS %.1f MiB", cmd.ProcessState.ExitCode(), bytes.Count(data, []byte("\n")), rss(cmd))
}

func TestFaultReplayHugeLine(t *testing.T) {
	cmd := mainCmd("replay", "-")
	stdin, _ := cmd.StdinPipe()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	// A 1 GiB line of the digit 0 (replay /dev/zero itself is refused
	// at once now: NUL bytes are not text).
	chunk := bytes.Repeat([]byte{'0'}, 1<<20)
	for range 1024 {
		stdin.Write(chunk)
	}
	stdin.Write([]byte("\n"))
	stdin.Close()
	waitWithin(t, cmd, 10*time.Minute)
	if !strings.Contains(stdout.String(), "TAP-1") {
		t.Errorf("report %q: want TAP-1", stdout.String())
	}
	fault(t, "replay of a 1 GiB line: TAP-1, exit %d, peak RSS %.1f MiB", cmd.ProcessState.ExitCode(), rss(cmd))
}

// padReader streams one JSON-RPC message whose params hold n bytes of
// padding, without holding it in memory.
func padReader(prefix, suffix string, n int64) io.Reader {
	return io.MultiReader(strings.NewReader(prefix), io.LimitReader(repeatByte('a'), n), strings.NewReader(suffix))
}

type repeatByte byte

func (r repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// A 1 GiB request body and a 1 GiB response body through the HTTP tap:
// both arrive byte-exact (SHA-256 on each side), the audit takes a prefix
// of each and says so (TAP-1), and the tap's memory stays far below the
// bodies' size.
func TestFaultHTTP1GiBBodies(t *testing.T) {
	const size = 1 << 30
	reqPrefix := `{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","params":{"protocolVersion":"draft","pad":"`
	respPrefix := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"draft","effects":[],"pad":"`
	const suffix = `"}}`
	want := sha256.New()
	io.Copy(want, padReader(reqPrefix, suffix, size))
	wantResp := sha256.New()
	io.Copy(wantResp, padReader(respPrefix, suffix, size))
	var got atomic.Value
	up := upstreamAHP(t, func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		io.Copy(h, r.Body)
		got.Store(fmt.Sprintf("%x", h.Sum(nil)))
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, padReader(respPrefix, suffix, size))
	})
	logPath := filepath.Join(t.TempDir(), "log")
	cmd, addr := startTap(t, io.Discard, "--upstream", up.URL, "--log", logPath)
	req, _ := http.NewRequest("POST", "http://"+addr+"/", padReader(reqPrefix, suffix, size))
	req.ContentLength = int64(len(reqPrefix) + size + len(suffix))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("response: %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	if g, _ := got.Load().(string); g != fmt.Sprintf("%x", want.Sum(nil)) {
		t.Errorf("the upstream received a different request body")
	}
	if !bytes.Equal(h.Sum(nil), wantResp.Sum(nil)) {
		t.Errorf("the harness received a different response body (%d bytes)", n)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitWithin(t, cmd, time.Minute)
	log, _ := os.ReadFile(logPath)
	if c := bytes.Count(log, []byte(`"check":"TAP-1"`)); c == 0 || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("exit %d, %d TAP-1 records in the log; want 0 and the prefix audit said:\n%s", cmd.ProcessState.ExitCode(), c, log)
	}
	fault(t, "1 GiB request and 1 GiB response body: both byte-exact (SHA-256), TAP-1 logged, exit 0, peak RSS %.1f MiB", rss(cmd))
}
