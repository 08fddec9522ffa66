package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scrapeMetrics GETs http://addr/metrics.
func scrapeMetrics(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	return string(b)
}

// metricSum adds the values of the series of text whose line starts with
// prefix (a family name, or a name and the first labels).
func metricSum(text, prefix string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// countingCopy copies r to w, adding the bytes to n.
func countingCopy(w io.Writer, r io.Reader, n *atomic.Int64, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 4096)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n.Add(int64(k))
			if _, werr := w.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitMetrics scrapes until ok says the audit caught up (it runs after
// forwarding), failing after a generous bound.
func waitMetrics(t *testing.T, addr string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		text := scrapeMetrics(t, addr)
		if ok(text) || time.Now().After(deadline) {
			return text
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// auditedMetrics waits until the metrics at addr count frames from the
// harness, answers from the backend, and an exchange and a latency for
// each answer, then returns a scrape that the next one repeats. A scrape
// is not one snapshot across families: an audit catching up from a
// backlog can judge every exchange between the collection of the latency
// histogram and that of the exchange counter (a CI failure: exchanges 5,
// latency count 0); and a frame is counted before its findings are.
func auditedMetrics(t *testing.T, addr string, frames, answers float64) string {
	t.Helper()
	waitMetrics(t, addr, func(s string) bool {
		return metricSum(s, `ahp_tap_frames_audited_total{direction="harness"}`) == frames &&
			metricSum(s, `ahp_tap_frames_audited_total{direction="backend"}`) == answers &&
			metricSum(s, "ahp_tap_exchanges_total") == answers &&
			metricSum(s, "ahp_tap_exchange_latency_seconds_count") == answers
	})
	ours := func(text string) string {
		var b strings.Builder
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "ahp_tap_") {
				b.WriteString(line + "\n")
			}
		}
		return b.String()
	}
	text := scrapeMetrics(t, addr)
	for range 100 {
		time.Sleep(20 * time.Millisecond)
		next := scrapeMetrics(t, addr)
		if ours(next) == ours(text) {
			return next
		}
		text = next
	}
	t.Fatalf("the metrics never settled; the last scrape:\n%s", text)
	return ""
}

// TestStdioMetrics: `ahp-tap stdio --metrics 127.0.0.1:0` in front of
// example-backend, with example-harness playing its session through it;
// the audit process serves counts that match the traffic exactly
// (issue 26 item 2).
func TestStdioMetrics(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "violations.log")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tapCmd := exec.CommandContext(ctx, tapBinary, "stdio", "--summary=false", "--log", logPath,
		"--metrics", "127.0.0.1:0", "--", tapBinary, "example-backend")
	tapCmd.WaitDelay = 5 * time.Second
	tapIn, _ := tapCmd.StdinPipe()
	tapOut, _ := tapCmd.StdoutPipe()
	tapErr, _ := tapCmd.StderrPipe()
	if err := tapCmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	errDone := make(chan string, 1)
	go func() {
		var rest strings.Builder
		sc := bufio.NewScanner(tapErr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ahp-tap stdio: metrics on http://"); ok {
				addrc <- strings.TrimSuffix(a, "/metrics")
				continue
			}
			rest.WriteString(sc.Text() + "\n")
		}
		errDone <- rest.String()
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-ctx.Done():
		t.Fatal("the tap never said where its metrics are")
	}
	before := scrapeMetrics(t, addr)
	if metricSum(before, "ahp_tap_frames_audited_total") != 0 || !strings.Contains(before, `ahp_tap_findings_total{check="BASE-2",level="error"} 0`) {
		t.Fatalf("before any traffic:\n%s", before)
	}

	harness := exec.CommandContext(ctx, tapBinary, "example-harness")
	harness.WaitDelay = 5 * time.Second
	hIn, _ := harness.StdinPipe()
	hOut, _ := harness.StdoutPipe()
	harness.Stderr = io.Discard
	if err := harness.Start(); err != nil {
		t.Fatal(err)
	}
	var fromHarness, fromBackend atomic.Int64
	d1, d2 := make(chan struct{}), make(chan struct{})
	go countingCopy(tapIn, hOut, &fromHarness, d1) // tapIn stays open: the tap, and its metrics, live on
	go countingCopy(hIn, tapOut, &fromBackend, d2)
	<-d1
	if err := harness.Wait(); err != nil {
		t.Fatalf("example-harness: %v", err)
	}
	// exampleSession: capabilities and four intercepts, each answered,
	// and two observes (notifications).
	const frames, answers = 7, 5
	text := auditedMetrics(t, addr, frames, answers)
	tapIn.Close()
	<-d2
	if err := tapCmd.Wait(); err != nil {
		t.Fatalf("tap: %v\n%s", err, <-errDone)
	}
	for _, c := range []struct {
		prefix string
		want   float64
	}{
		{`ahp_tap_frames_audited_total{direction="harness"}`, frames},
		{`ahp_tap_frames_audited_total{direction="backend"}`, answers},
		// Line terminators ("\n", one a frame) are not counted.
		{`ahp_tap_audited_bytes_total{direction="harness"}`, float64(fromHarness.Load() - frames)},
		{`ahp_tap_audited_bytes_total{direction="backend"}`, float64(fromBackend.Load() - answers)},
		{`ahp_tap_exchanges_total{event="none",method="hooks/capabilities"`, 1},
		{`ahp_tap_exchanges_total{event="tool.before",method="hooks/intercept"`, 4},
		{`ahp_tap_exchanges_total{event="tool.before",method="hooks/intercept",outcome="explicit_deny"}`, 2},
		{`ahp_tap_exchanges_total{event="tool.before",method="hooks/intercept",outcome="no_effect"}`, 2},
		{`ahp_tap_exchanges_total{event="other"`, 0},
		{`ahp_tap_exchange_latency_seconds_count`, answers},
		{`ahp_tap_audit_dropped_total`, 0},
	} {
		if got := metricSum(text, c.prefix); got != c.want {
			t.Errorf("%s = %v, want %v", c.prefix, got, c.want)
		}
	}
	if t.Failed() {
		t.Logf("the scrape:\n%s", text)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := metricSum(text, "ahp_tap_findings_total"), float64(strings.Count(string(log), "\n")); got != want {
		t.Errorf("ahp_tap_findings_total sums to %v, the log has %v findings\n%s", got, want, log)
	}
	if strings.Contains(text, "evt_demo") || strings.Contains(text, "sess_demo") || strings.Contains(text, "call_") {
		t.Error("an id is a metric label")
	}
}

// TestStdioMetricsRefused: --metrics off loopback is refused with exit 2
// before the backend starts, unless --allow-remote; a bad address too.
func TestStdioMetricsRefused(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "not a port"} {
		r := runTap(t, "", "stdio", "--metrics", addr, "--", "sh", "-c", "echo started")
		if r.code != 2 || strings.Contains(r.stdout, "started") || !strings.Contains(r.stderr, "--metrics") {
			t.Errorf("--metrics %s: exit %d, stdout %q, stderr %q", addr, r.code, r.stdout, r.stderr)
		}
	}
	r := runTap(t, "", "stdio", "--metrics", "127.0.0.1:0", "--", "sh", "-c", "echo started")
	if r.code != 0 || r.stdout != "started\n" {
		t.Errorf("--metrics 127.0.0.1:0: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runTap(t, "", "stdio", "--metrics", "0.0.0.0:0", "--allow-remote", "--", "sh", "-c", "echo started")
	if r.code != 0 || r.stdout != "started\n" || !strings.Contains(r.stderr, "WARNING: --allow-remote") {
		t.Errorf("--metrics 0.0.0.0:0 --allow-remote: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestStdioMetricsPerEvent: per_event taps sharing --state are audited by
// one shared audit process, which serves one endpoint for every event:
// example-harness --lifecycle per_event starts a tap per message, and the
// counts cover all of them (issue 26 item 2).
func TestStdioMetricsPerEvent(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	flags := []string{"stdio", "--lifecycle", "per_event", "--state", state, "--summary=false",
		"--log", filepath.Join(dir, "v.log"), "--metrics", addr, "--"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A tap whose backend waits keeps a link open, so the shared audit
	// process (which ends when idle) is still there to be scraped.
	holder := exec.CommandContext(ctx, tapBinary, append(flags, tapBinary, "example-backend")...)
	holder.Dir, holder.WaitDelay = dir, 5*time.Second
	hold, _ := holder.StdinPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	var text string
	for {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			resp.Body.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the shared audit process never served metrics")
		}
		time.Sleep(20 * time.Millisecond)
	}
	args := append([]string{"example-harness", "--lifecycle", "per_event", "--", tapBinary}, flags...)
	r := runTapIn(t, dir, append(args, tapBinary, "example-backend")...)
	if r.code != 0 {
		t.Fatalf("example-harness: exit %d\n%s", r.code, r.stderr)
	}
	const frames, answers = 7, 5 // one tap a message; the two observes are notifications
	text = auditedMetrics(t, addr, frames, answers)
	hold.Close()
	if err := holder.Wait(); err != nil {
		t.Errorf("holding tap: %v", err)
	}
	for _, c := range []struct {
		prefix string
		want   float64
	}{
		{`ahp_tap_frames_audited_total{direction="harness"}`, frames},
		{`ahp_tap_frames_audited_total{direction="backend"}`, answers},
		{`ahp_tap_exchanges_total{event="tool.before",method="hooks/intercept"`, 4},
		{`ahp_tap_exchanges_total{event="none",method="hooks/capabilities"`, 1},
		{`ahp_tap_exchange_latency_seconds_count`, answers},
	} {
		if got := metricSum(text, c.prefix); got != c.want {
			t.Errorf("%s = %v, want %v", c.prefix, got, c.want)
		}
	}
	if t.Failed() {
		t.Logf("the scrape:\n%s", text)
	}
}
