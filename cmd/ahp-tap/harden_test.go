package main

// Regression tests for issue 8 (hardening) items 3, 4, 5, 7 and 10 on the
// stdio tap: real ahp-tap processes (the test binary re-run), real FIFOs,
// symbolic links and signals.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func init() {
	// setsidholder starts a grandchild in a session of its own (setsid)
	// that keeps stdout open and sleeps, prints the grandchild's pid, and
	// exits 0. It prints the pid itself: the grandchild holds stdout from
	// the moment Start returns (it has been exec'd), and a grandchild that
	// printed it would race the backend's exit and --drain.
	helpers["setsidholder"] = func([]string) int {
		cmd := exec.Command(childBinary, "helper", "holder")
		cmd.Stdout = os.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%d\n", cmd.Process.Pid)
		return 0
	}
	// holder sleeps forever, holding the descriptors it was given.
	helpers["holder"] = func([]string) int {
		for {
			time.Sleep(time.Hour)
		}
	}
	// groupspawner starts a grandchild in its own process group that
	// prints its pid and sleeps, then sleeps itself.
	helpers["groupspawner"] = func([]string) int {
		cmd := exec.Command(childBinary, "helper", "sleeper")
		cmd.Stdout = os.Stdout
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		select {}
	}
	// sigreport prints "ready", then the name of every signal it gets;
	// SIGTERM ends it with status 7.
	helpers["sigreport"] = func([]string) int {
		c := make(chan os.Signal, 8)
		signal.Notify(c, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGTERM)
		fmt.Println("ready")
		for s := range c {
			fmt.Println(s.(syscall.Signal).String())
			if s == syscall.SIGTERM {
				return 7
			}
		}
		return 0
	}
	// ignored says whether SIGINT and SIGHUP were ignored when it started,
	// then reads stdin to EOF.
	helpers["ignored"] = func([]string) int {
		fmt.Printf("INT ignored %v, HUP ignored %v\n", signal.Ignored(syscall.SIGINT), signal.Ignored(syscall.SIGHUP))
		io.Copy(io.Discard, os.Stdin)
		return 0
	}
	// flood prints its pid on stderr, writes args[0] KiB to stdout and
	// exits 0.
	helpers["flood"] = func(args []string) int {
		n, _ := strconv.Atoi(args[0])
		fmt.Fprintf(os.Stderr, "%d\n", os.Getpid())
		os.Stdout.Write(bytes.Repeat([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n"), n<<10/32))
		return 0
	}
}

// waitWithin waits for cmd, killing it and failing the test when it has
// not exited within d: the hang the test is about. (Not a timing
// assertion: d is many times what the exit takes.)
func waitWithin(t *testing.T, cmd *exec.Cmd, d time.Duration) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		<-errc
		t.Fatalf("ahp-tap did not exit within %s", d)
		return nil
	}
}

// TestStdioExitsWhenASetsidDescendantHoldsStdout: the backend exits 0
// leaving a grandchild in a session of its own that keeps the backend's
// stdout open (issue 8 item 3c). ahp-tap must exit with the backend's
// status within --drain, not wait for the grandchild.
func TestStdioExitsWhenASetsidDescendantHoldsStdout(t *testing.T) {
	cmd := tapCmd([]string{"--drain", "300ms"}, "setsidholder")
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	var stderr syncBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild said %q", line)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	err = waitWithin(t, cmd, 30*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("ahp-tap exit = %d (%v), want the backend's 0", code, err)
	}
	if !strings.Contains(stderr.String(), "still holds its stdout open") {
		t.Errorf("stderr = %q, want the reason the forwarding stopped", stderr.String())
	}
	if !running(pid) {
		t.Errorf("the setsid'd grandchild was killed; it must outlive the backend as it would without ahp-tap")
	}
}

// TestStdioExitsWhenStderrIsNotRead: with --log - and a harness that never
// reads ahp-tap's stderr, the findings fill the pipe; ahp-tap must still
// forward every byte and exit (issue 8 item 3a).
func TestStdioExitsWhenStderrIsNotRead(t *testing.T) {
	cmd := tapCmd([]string{"--log", "-", "--drain", "500ms", "--summary"}, "cat")
	var in []byte // 5,000 responses nobody asked for: six findings each, ~10 MB of log
	for i := range 5000 {
		in = fmt.Appendf(in, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\n", i)
	}
	cmd.Stdin = bytes.NewReader(in)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	r, w, err := os.Pipe() // stderr nobody reads
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	err = waitWithin(t, cmd, 60*time.Second)
	if err != nil {
		t.Errorf("ahp-tap: %v, want exit 0", err)
	}
	if !bytes.Equal(stdout.Bytes(), in) {
		t.Errorf("forwarded %d bytes, want the %d sent", stdout.Len(), len(in))
	}
}

// TestStdioSignalAfterBackendExitEndsTheWait: the backend wrote more than
// the pipes hold and exited, the harness does not read: a SIGTERM to
// ahp-tap then exits at once with the backend's status (issue 8 items 3a,
// 5), even with a long --drain.
func TestStdioSignalAfterBackendExitEndsTheWait(t *testing.T) {
	// 160 KiB: more than the two pipes and ahp-tap's buffer hold ahead of
	// the harness, less than keeps the backend from exiting.
	cmd := tapCmd([]string{"--drain", "1h", "--audit=false"}, "flood", "160")
	r, w, _ := os.Pipe() // stdout nobody reads
	defer r.Close()
	cmd.Stdout = w
	stderr, _ := cmd.StderrPipe()
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("backend said %q", line)
	}
	// Until ahp-tap has reaped it (its /proc entry is gone, not only a
	// zombie), a signal is still the backend's.
	for i := 0; ; i++ {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			break
		}
		if i == 3000 {
			cmd.Process.Kill()
			t.Fatalf("backend %d was not reaped", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	waitWithin(t, cmd, 30*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("ahp-tap exit = %d, want the backend's 0", code)
	}
}

// TestStdioFIFOAtLogOrCaptureDoesNotBlock: a FIFO without a reader at
// --log or --capture must not block the start (issue 8 item 3b): the
// backend runs and its status is mirrored, the refusal is said.
func TestStdioFIFOAtLogOrCaptureDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--log", "--capture"} {
		cmd := tapCmd([]string{flag, fifo}, "exit", "3")
		var stderr syncBuf
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitWithin(t, cmd, 30*time.Second)
		if code := cmd.ProcessState.ExitCode(); code != 3 {
			t.Errorf("%s FIFO: exit = %d, want the backend's 3", flag, code)
		}
		if !strings.Contains(stderr.String(), "not a regular file") {
			t.Errorf("%s FIFO: stderr = %q, want the refusal said", flag, stderr.String())
		}
	}
}

// TestStdioFilesAreNotFollowedOrLeftOpen: a symbolic link planted at --log
// or --capture is never followed (its target is left as it was, a dangling
// one creates nothing), an existing log readable by others is made 0600
// with a notice, and a world-writable --state is refused (issue 8 item 4).
func TestStdioFilesAreNotFollowedOrLeftOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rc := filepath.Join(dir, "bashrc")
	os.WriteFile(rc, []byte("# rc\n"), 0o600)
	in := []byte("not json\n")
	for _, flag := range []string{"--log", "--capture"} {
		link := filepath.Join(dir, "link"+flag)
		os.Symlink(rc, link)
		dangling := filepath.Join(dir, "dangling"+flag)
		created := filepath.Join(dir, "created"+flag)
		os.Symlink(created, dangling)
		for _, p := range []string{link, dangling} {
			cmd := tapCmd([]string{flag, p}, "cat")
			cmd.Stdin = bytes.NewReader(in)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err != nil || !bytes.Equal(stdout.Bytes(), in) {
				t.Errorf("%s %s: %v, forwarded %q", flag, p, err, stdout.Bytes())
			}
			if !strings.Contains(stderr.String(), "symbolic link") {
				t.Errorf("%s %s: stderr = %q, want the link refused", flag, p, stderr.String())
			}
		}
		if data, _ := os.ReadFile(rc); string(data) != "# rc\n" {
			t.Fatalf("%s: the link's target now holds %q", flag, data)
		}
		if _, err := os.Lstat(created); err == nil {
			t.Errorf("%s: a dangling link created its target", flag)
		}
	}
	open := filepath.Join(dir, "open.jsonl")
	os.WriteFile(open, nil, 0o644)
	os.Chmod(open, 0o644)
	cmd := tapCmd([]string{"--log", open}, "cat")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	if st, _ := os.Stat(open); st.Mode().Perm() != 0o600 {
		t.Errorf("existing 0644 log left at %v, want 0600", st.Mode().Perm())
	}
	if !strings.Contains(stderr.String(), "changed it to 0600") {
		t.Errorf("stderr = %q, want a notice of the mode change", stderr.String())
	}
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o777)
	os.Chmod(state, 0o777)
	cmd = tapCmd([]string{"--state", state}, "cat")
	stderr.Reset()
	cmd.Stderr = &stderr
	cmd.Run()
	// The audit process refuses it (the backend still runs: the state is
	// an aid to auditing, never a reason to disturb traffic).
	if !strings.Contains(stderr.String(), "writable by every user") {
		t.Errorf("world-writable --state: exit %d, stderr %q; want the refusal", cmd.ProcessState.ExitCode(), stderr.String())
	}
}

// TestStdioForwardsQuitUsrAndWinch: SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH
// reach the backend, and SIGQUIT does not make ahp-tap dump its goroutines
// (issue 8 item 10).
func TestStdioForwardsQuitUsrAndWinch(t *testing.T) {
	cmd := tapCmd(nil, "sigreport")
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	var stderr syncBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, _ := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("backend said %q", line)
	}
	for _, s := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGQUIT} {
		cmd.Process.Signal(s)
		line, _ := out.ReadString('\n')
		if strings.TrimSpace(line) != s.String() {
			t.Errorf("after %v to ahp-tap the backend said %q, want %q", s, line, s.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	io.Copy(io.Discard, out)
	waitWithin(t, cmd, 30*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Errorf("ahp-tap exit = %d, want the backend's 7", code)
	}
	if strings.Contains(stderr.String(), "goroutine") {
		t.Errorf("stderr holds a Go stack dump: %.200q", stderr.String())
	}
}

// TestStdioKeepsSignalsIgnoredAtStart: under `trap "" INT HUP` (nohup, a
// background job), the backend must start with SIGINT and SIGHUP ignored
// as it would without ahp-tap, and a SIGINT to ahp-tap must neither kill
// it nor be forwarded (issue 8 item 7).
func TestStdioKeepsSignalsIgnoredAtStart(t *testing.T) {
	argv := []string{childBinary, "stdio", "--", childBinary, "helper", "ignored"}
	cmd := exec.Command("/bin/sh", "-c", `trap "" INT HUP; exec "$@"`, "sh")
	cmd.Args = append(cmd.Args, argv...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	line, _ := out.ReadString('\n')
	if line != "INT ignored true, HUP ignored true\n" {
		t.Errorf("backend started with %q, want both ignored", line)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(200 * time.Millisecond) // a delivered signal would kill them now
	stdin.Close()
	waitWithin(t, cmd, 30*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("ahp-tap exit = %d (%v), want 0: the ignored signals must change nothing", code, cmd.ProcessState)
	}
}

// syncBuf is a bytes.Buffer safe for the exec copier and the test.
type syncBuf struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStdioKilledTapLeavesNoGrandchild kills ahp-tap with SIGKILL while
// the backend has a child in its process group: the watchdog must take
// the grandchild down too, not only the backend (issue 8 item 10).
func TestStdioKilledTapLeavesNoGrandchild(t *testing.T) {
	cmd := tapCmd(nil, "groupspawner")
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild said %q", line)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond) // the watchdog starts right after the backend
	cmd.Process.Kill()
	cmd.Wait()
	for i := 0; running(pid); i++ {
		if i == 1000 {
			t.Fatalf("grandchild %d still runs after ahp-tap was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
