package stdio

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// findings is a concurrency-safe sink for tests.
type findings struct {
	mu sync.Mutex
	fs []tap.Finding
}

func (s *findings) Write(f tap.Finding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fs = append(s.fs, f)
}

func (s *findings) check(id string) []tap.Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tap.Finding
	for _, f := range s.fs {
		if f.Check == id {
			out = append(out, f)
		}
	}
	return out
}

func (s *findings) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, f := range s.fs {
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}

// audited turns on auditing with every rule, for lifecycle lc.
func audited(cfg Config, lc string) (Config, *findings) {
	sink := &findings{}
	cfg.Session = tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Lifecycle: lc}, Rules: rules.Set(rules.Options{}), Sink: sink})
	return cfg, sink
}

// run runs cfg with in as the harness's bytes and returns what reached
// the harness.
func run(t *testing.T, cfg Config, in io.Reader) (Result, []byte) {
	t.Helper()
	var out bytes.Buffer
	cfg.Stdin, cfg.Stdout = in, &out
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	res, err := New(cfg).Run(context.Background())
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	return res, out.Bytes()
}

// uglyInputs are the byte streams forwarding must not change.
var uglyInputs = map[string][]byte{
	"empty":              {},
	"one message":        []byte(`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}` + "\n"),
	"crlf":               []byte("{\"a\":1}\r\n{\"b\":2}\r\n"),
	"u2028":              []byte("{\"t\":\"a\u2028b\"}\n"),
	"no final newline":   []byte(`{"jsonrpc":"2.0"}`),
	"garbage":            []byte("not json at all\n\x00\x01\x02\n\n\n"),
	"invalid utf8":       {0xff, 0xfe, '{', '}', '\n', 0xc3, 0x28, '\n'},
	"nul bytes":          bytes.Repeat([]byte{0}, 70000),
	"pretty":             []byte("{\n  \"jsonrpc\": \"2.0\"\n}\n"),
	"long line (3 MiB)":  append(bytes.Repeat([]byte("x"), 3<<20), '\n'),
	"many short lines":   bytes.Repeat([]byte("{}\n"), 50000),
	"lone carriage rets": []byte("\r\r\r\n\r"),
}

func TestForwardingIsByteExact(t *testing.T) {
	defer goleak.VerifyNone(t)
	for name, in := range uglyInputs {
		t.Run(name, func(t *testing.T) {
			cfg, _ := audited(helperConfig("cat"), "")
			cfg.Hash = true
			res, out := run(t, cfg, bytes.NewReader(in))
			if !bytes.Equal(out, in) {
				t.Fatalf("forwarded %d bytes, want the %d bytes given (first difference at %d)", len(out), len(in), firstDiff(out, in))
			}
			sum := sha256.Sum256(in)
			if !bytes.Equal(res.Harness.SHA256, sum[:]) || !bytes.Equal(res.Backend.SHA256, sum[:]) {
				t.Errorf("SHA256 harness %x backend %x, want %x both", res.Harness.SHA256, res.Backend.SHA256, sum)
			}
			if res.Harness.Bytes != int64(len(in)) || res.Backend.Bytes != int64(len(in)) {
				t.Errorf("Bytes = %d/%d, want %d", res.Harness.Bytes, res.Backend.Bytes, len(in))
			}
		})
	}
}

// TestEveryAuditPriorityForwardsAndAudits runs the same session at each
// audit priority: bytes are forwarded exactly and, at this gentle pace,
// every line is audited.
func TestEveryAuditPriorityForwardsAndAudits(t *testing.T) {
	t.Parallel()
	in := bytes.Repeat([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"hooks/observe\",\"params\":{}}\nbanner\n"), 50)
	for _, p := range []Priority{PriorityLow, PriorityIdle, PriorityNormal} {
		cfg, sink := audited(helperConfig("cat"), "")
		cfg.AuditPriority = p
		res, out := run(t, cfg, bytes.NewReader(in))
		if !bytes.Equal(out, in) {
			t.Errorf("priority %s: forwarded bytes differ at %d", p, firstDiff(out, in))
		}
		// 50 banners per side, 50 requests on the backend's stdout.
		if got := len(sink.check("STDIO-1")); res.NotAudited == 0 && got != 150 {
			t.Errorf("priority %s: STDIO-1 findings = %d, want 150", p, got)
		}
	}
	if _, err := ParsePriority("high"); err == nil {
		t.Errorf("ParsePriority(high) error = nil")
	}
}

// TestForwardingSplitWrites feeds the harness's bytes one at a time and in
// random chunk sizes: frame boundaries never line up with reads.
func TestForwardingSplitWrites(t *testing.T) {
	t.Parallel()
	in := bytes.Repeat([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"hooks/observe\",\"params\":{}}\r\nbanner\n"), 200)
	cfg, sink := audited(helperConfig("cat"), "")
	// Room for every one-byte chunk and frame: nothing is dropped.
	cfg.ChunkQueue, cfg.ChunkBytes, cfg.Queue = 1<<15, 1<<30, 1<<15
	res, out := run(t, cfg, iotest.OneByteReader(bytes.NewReader(in)))
	if !bytes.Equal(out, in) {
		t.Fatalf("one-byte reads: forwarded bytes differ at %d", firstDiff(out, in))
	}
	if res.NotAudited != 0 {
		t.Fatalf("NotAudited = %d, want 0", res.NotAudited)
	}
	// Every line is audited whatever the read sizes: 200 CRLF warnings
	// and 200 non-JSON lines per direction, and 200 requests on the
	// backend's stdout.
	if got := len(sink.check("STDIO-1")); got != 1000 {
		t.Errorf("STDIO-1 findings = %d, want 1000", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5; i++ {
		cfg, _ := audited(helperConfig("cat"), "")
		_, out := run(t, cfg, &randomReader{r: r, data: in})
		if !bytes.Equal(out, in) {
			t.Fatalf("random reads: forwarded bytes differ at %d", firstDiff(out, in))
		}
	}
}

// randomReader returns data in reads of random sizes.
type randomReader struct {
	r    *rand.Rand
	data []byte
}

func (rr *randomReader) Read(p []byte) (int, error) {
	if len(rr.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), 1+rr.r.IntN(300), len(rr.data))
	copy(p, rr.data[:n])
	rr.data = rr.data[n:]
	return n, nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// FuzzForwarding: whatever the harness sends, the backend (cat) gets it
// and the harness gets it back, byte for byte, and nothing panics.
func FuzzForwarding(f *testing.F) {
	for _, in := range uglyInputs {
		if len(in) < 1<<16 {
			f.Add(in)
		}
	}
	if data, err := os.ReadFile("../../shared/ahp/fixtures/draft/stdio/intercept-request-multiline.invalid.jsonl"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		cfg, _ := audited(helperConfig("cat"), "persistent")
		cfg.MaxAuditLine = 64 // exercise truncation too
		_, out := run(t, cfg, bytes.NewReader(in))
		if !bytes.Equal(out, in) {
			t.Fatalf("forwarded %q, want %q", out, in)
		}
	})
}

func TestStderrPassesThrough(t *testing.T) {
	t.Parallel()
	errText := "diagnostic \xff line\nno newline"
	var stderr bytes.Buffer
	cfg, sink := audited(helperConfig("stderr", errText, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"), "")
	cfg.Stderr = &stderr
	_, out := run(t, cfg, strings.NewReader(""))
	if stderr.String() != errText {
		t.Errorf("stderr = %q, want %q", stderr.String(), errText)
	}
	if len(out) == 0 {
		t.Errorf("stdout is empty")
	}
	if fs := sink.check("STDIO-1"); len(fs) != 0 {
		t.Errorf("stderr produced findings:%s", sink)
	}
}

func TestExitStatusMirrored(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 1, 3, 42} {
		res, _ := run(t, helperConfig("exit", strconv.Itoa(code)), strings.NewReader(""))
		if res.ExitCode != code || res.Signal != 0 || res.Status() != code {
			t.Errorf("exit %d: Result = %+v, want ExitCode %d", code, res, code)
		}
	}
}

func TestBackendCrashMidFrame(t *testing.T) {
	t.Parallel()
	partial := `{"jsonrpc":"2.0","id":"e1","res`
	cfg, sink := audited(helperConfig("selfkill", partial), "per_event")
	res, out := run(t, cfg, strings.NewReader(`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft"}}`+"\n"))
	if res.Signal != syscall.SIGKILL || res.Status() != 128+9 {
		t.Errorf("Result = %+v, want Signal SIGKILL, Status 137", res)
	}
	if string(out) != partial {
		t.Errorf("forwarded %q, want %q", out, partial)
	}
	if fs := sink.check("STDIO-1"); len(fs) != 1 || !strings.Contains(fs[0].Message, "middle of a line") {
		t.Errorf("STDIO-1 findings: want one about the unterminated line:%s", sink)
	}
	var crash bool
	for _, f := range sink.check("STDIO-2") {
		crash = crash || strings.Contains(f.Message, "SIGKILL")
	}
	if !crash {
		t.Errorf("no STDIO-2 finding about the crash:%s", sink)
	}
}

func TestStdoutBannerForwardedAndReported(t *testing.T) {
	t.Parallel()
	answer := `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`
	cfg, sink := audited(helperConfig("banner", answer), "")
	_, out := run(t, cfg, strings.NewReader(`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{}}`+"\n"))
	want := "Policy backend v1.0 starting on stdio\n" + answer + "\n"
	if string(out) != want {
		t.Errorf("forwarded %q, want %q", out, want)
	}
	fs := sink.check("STDIO-1")
	if len(fs) != 1 || fs[0].Dir != tap.FromBackend || !strings.Contains(fs[0].Message, "non-protocol text") {
		t.Errorf("want one STDIO-1 finding about the banner:%s", sink)
	}
}

func TestHarnessClosingStdinClosesBackendStdin(t *testing.T) {
	t.Parallel()
	res, out := run(t, helperConfig("waiteof"), strings.NewReader("abc"))
	if string(out) != "got 3 bytes then EOF\n" || res.ExitCode != 0 {
		t.Errorf("out %q, Result %+v", out, res)
	}
}

func TestBackendClosingStdinIsSeenByHarness(t *testing.T) {
	t.Parallel()
	// The backend closes its stdin and lives on; the harness's writes must
	// fail as they would without ahp-tap, not pile up. The tap closes the
	// harness's pipe; here we just check the tap survives and forwards.
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	cfg := helperConfig("closein")
	cfg.Stdin, cfg.Stdout, cfg.Stderr = pr, outW, os.Stderr
	tp := New(cfg)
	done := make(chan Result)
	go func() {
		res, _ := tp.Run(context.Background())
		done <- res
	}()
	line, _ := bufio.NewReader(outR).ReadString('\n')
	if line != "closed\n" {
		t.Fatalf("backend said %q", line)
	}
	// Keep writing until the write fails (the tap closed our pipe after
	// its write to the backend failed).
	go func() {
		for {
			if _, err := pw.Write([]byte("x\n")); err != nil {
				return
			}
		}
	}()
	tp.Signal(syscall.SIGKILL)
	go io.Copy(io.Discard, outR)
	res := <-done
	if res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v, want SIGKILL", res)
	}
	// The harness's ends: the writer and the reader above stop, and so
	// does the tap's reader of our stdin (no goroutine outlives the test
	// into a leak check of the next one, under -count).
	pw.Close()
	outR.Close()
}

// startAsync runs cfg with pipes for the harness's side.
func startAsync(t *testing.T, cfg Config) (*Tap, io.WriteCloser, *bufio.Reader, chan Result) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	cfg.Stdin, cfg.Stdout, cfg.Stderr = inR, outW, os.Stderr
	tp := New(cfg)
	done := make(chan Result, 1)
	go func() {
		res, err := tp.Run(context.Background())
		if err != nil {
			t.Errorf("Run() error = %v", err)
		}
		outW.Close()
		done <- res
	}()
	t.Cleanup(func() { inW.Close() })
	return tp, inW, bufio.NewReader(outR), done
}

func TestSignalForwarded(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		tp, _, out, done := startAsync(t, helperConfig("trap"))
		if line, _ := out.ReadString('\n'); line != "ready\n" {
			t.Fatalf("backend said %q", line)
		}
		tp.Signal(sig)
		line, _ := out.ReadString('\n')
		if want := "got " + sig.String() + "\n"; line != want {
			t.Errorf("after %v backend said %q, want %q", sig, line, want)
		}
		go io.Copy(io.Discard, out)
		if res := <-done; res.ExitCode != 7 {
			t.Errorf("Result = %+v, want exit 7", res)
		}
	}
}

func TestSecondSignalKillsGroup(t *testing.T) {
	tp, _, out, done := startAsync(t, helperConfig("stubborn"))
	if line, _ := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("backend said %q", line)
	}
	tp.Signal(syscall.SIGTERM) // ignored by the backend
	tp.Signal(syscall.SIGTERM) // the same request (within SignalRepeat): ignored too
	select {
	case res := <-done:
		t.Fatalf("a signal repeated at once was taken as a second one: %+v", res)
	case <-time.After(SignalRepeat + 50*time.Millisecond):
	}
	tp.Signal(syscall.SIGTERM) // a second request: kill the group
	go io.Copy(io.Discard, out)
	if res := <-done; res.Signal != syscall.SIGKILL {
		t.Errorf("Result = %+v, want killed by SIGKILL", res)
	}
}

func TestNoProcessLeftBehind(t *testing.T) {
	tp, _, out, done := startAsync(t, helperConfig("spawner"))
	_ = tp
	line, _ := out.ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("spawner said %q", line)
	}
	go io.Copy(io.Discard, out)
	<-done
	// The grandchild shared the backend's stdout, so Run could only see
	// EOF once it was exiting; it may take a moment to finish dying. A
	// leaked process would live on: give up after a generous wait.
	for i := 0; alive(pid); i++ {
		if i == 1000 {
			t.Fatalf("grandchild %d is still running after the backend exited", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil && !isZombie(pid)
	}
	// pid (comm) state ...
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func isZombie(pid int) bool { return false }

func TestContextCancelKillsBackend(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	defer inW.Close() // the tap's reader of the harness's stdin stops with the test
	cfg := helperConfig("sleeper")
	cfg.Stdin, cfg.Stdout, cfg.Stderr = inR, io.Discard, os.Stderr
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := New(cfg).Run(ctx)
	if err != nil || res.Signal != syscall.SIGKILL {
		t.Errorf("Run() = %+v, %v; want killed by SIGKILL", res, err)
	}
}

func TestStartError(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Command: "/nonexistent/backend", Stdin: strings.NewReader(""), Stdout: io.Discard}).Run(context.Background())
	se, ok := err.(*StartError)
	if !ok || se.Code != 127 {
		t.Errorf("Run() error = %v, want a StartError with code 127", err)
	}
}

// blockingSink holds the auditor on its first finding until released.
type blockingSink struct {
	findings
	release chan struct{}
	once    sync.Once
}

func (s *blockingSink) Write(f tap.Finding) {
	s.once.Do(func() { <-s.release })
	s.findings.Write(f)
}

// TestForwardingNeverWaitsForTheAuditor stalls the auditor on its first
// finding: every byte must still be forwarded, and the audit copies that
// did not fit are dropped and reported (TAP-1), never waited for.
func TestForwardingNeverWaitsForTheAuditor(t *testing.T) {
	in := bytes.Repeat([]byte("not json\n"), 200000) // 1.8 MB, one finding per run... and per line below
	in = append(in, bytes.Repeat([]byte("{\"jsonrpc\":\"1.0\"}\n"), 20000)...)
	sink := &blockingSink{release: make(chan struct{})}
	cfg := helperConfig("cat")
	cfg.Session = tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}), Sink: sink})
	cfg.Queue = 16
	cfg.ChunkQueue = 4
	tp, inW, out, done := startAsync(t, cfg)
	go func() {
		inW.Write(in)
		inW.Close()
	}()
	got := make([]byte, len(in))
	if _, err := io.ReadFull(out, got); err != nil {
		t.Fatalf("reading forwarded bytes: %v", err)
	}
	if !bytes.Equal(got, in) {
		t.Fatalf("forwarded bytes differ at %d", firstDiff(got, in))
	}
	close(sink.release) // only now may the auditor proceed
	go io.Copy(io.Discard, out)
	res := <-done
	if n := tp.inFlight.Load(); n != 0 {
		t.Errorf("%d chunks still counted in flight after the run: the in-process clock would never vouch again", n)
	}
	if res.NotAudited == 0 {
		t.Errorf("NotAudited = 0, want frames dropped while the auditor was stalled")
	}
	var reported bool
	for _, f := range sink.check("TAP-1") {
		reported = reported || strings.Contains(f.Message, "not audited")
	}
	if !reported {
		t.Errorf("no TAP-1 finding about frames not audited:%s", sink.String()[:min(2000, len(sink.String()))])
	}
}

// TestDroppedFramesDoNotBreakCorrelation stalls the auditor (on the
// finding for a first garbage line) while a persistent backend answers many
// requests: requests whose audit copy was dropped must not make their
// responses "unsolicited" or leave requests "unanswered" (CORR-2), nor leave
// intercepts "outstanding" (STDIO-3).
func TestDroppedFramesDoNotBreakCorrelation(t *testing.T) {
	const n = 3000
	var in bytes.Buffer
	in.WriteString("garbage\n")
	for i := range n {
		id := strconv.Itoa(i)
		in.WriteString(`{"jsonrpc":"2.0","id":"e` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e` + id + `","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"},"tool":{"name":"Bash","kind":"shell","origin":"native","input":{"command":"ls"}},"call":{"id":"c` + id + `"},"path":"native"},"capabilities":{"effects":["deny"]}}}` + "\n")
	}
	sink := &blockingSink{release: make(chan struct{})}
	cfg := helperConfig("echoid")
	cfg.Session = tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Lifecycle: "persistent"}, Rules: rules.Set(rules.Options{}), Sink: sink})
	cfg.Queue = 16
	_, inW, out, done := startAsync(t, cfg)
	go func() {
		inW.Write(in.Bytes())
		inW.Close()
	}()
	for i := range n {
		if _, err := out.ReadString('\n'); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
	}
	close(sink.release) // every byte went both ways; now let the auditor run
	go io.Copy(io.Discard, out)
	res := <-done
	if res.NotAudited == 0 {
		t.Fatalf("NotAudited = 0, want frames dropped while the auditor was stalled")
	}
	for _, id := range []string{"CORR-2", "STDIO-3"} {
		if fs := sink.check(id); len(fs) != 0 {
			t.Errorf("%d %s findings after dropped frames, want 0; first: %v", len(fs), id, fs[0])
		}
	}
}

// TestTapsInOneProcessDoNotKillEachOthersBackends runs short audited taps
// while another tap's backend lives on: the threads those taps pin for
// auditing end with them, and that must not deliver the long-lived
// backend's parent-death signal. (Without the dedicated forking thread the
// fault needs an unlucky thread choice, so this guards the property rather
// than reproducing the fault every time.)
func TestTapsInOneProcessDoNotKillEachOthersBackends(t *testing.T) {
	tp, _, out, done := startAsync(t, helperConfig("trap"))
	if line, _ := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("backend said %q", line)
	}
	for range 10 {
		cfg, _ := audited(helperConfig("cat"), "")
		run(t, cfg, strings.NewReader("{}\nx\n"))
	}
	tp.Signal(syscall.SIGTERM)
	if line, _ := out.ReadString('\n'); line != "got terminated\n" {
		t.Errorf("long-lived backend said %q after SIGTERM, want it alive to answer", line)
	}
	go io.Copy(io.Discard, out)
	if res := <-done; res.ExitCode != 7 {
		t.Errorf("Result = %+v, want exit 7", res)
	}
}
