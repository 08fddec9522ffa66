package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

// pendingCapture writes a capture of a persistent stdio backend (the
// example capture's header) that never answers any of n hooks/intercept
// requests (in a child without the race detector: generate).
func pendingCapture(t *testing.T, n int) string {
	t.Helper()
	return generate(t, "pending.capture", "pending", strconv.Itoa(n))
}

func init() {
	// pending PATH N: see pendingCapture.
	generators["pending"] = func(p string, args []string) error {
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return err
		}
		return pendingFile(p, n)
	}
}

func pendingFile(p string, n int) error {
	data, err := os.ReadFile(exampleCapture)
	if err != nil {
		return err
	}
	header, _, _ := strings.Cut(string(data), "\n")
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(header + "\n")
	start := time.Date(2026, 8, 24, 8, 51, 14, 0, time.UTC)
	for i := 1; i <= n; i++ {
		raw := fmt.Sprintf(`{\"jsonrpc\":\"2.0\",\"id\":\"evt-%d\",\"method\":\"hooks/intercept\",\"params\":{\"protocolVersion\":\"draft\",\"event\":{\"id\":\"evt-%d\",\"source\":\"urn:uuid:0d8c6a52-3f0e-4d8e-9b1a-2f6b9a7c1e01\",\"type\":\"tool.before\",\"time\":\"2026-08-24T08:51:14Z\",\"harness\":{\"name\":\"h\",\"version\":\"1\"},\"session\":{\"id\":\"s\",\"cwd\":\"/w\"},\"tool\":{\"name\":\"Bash\",\"kind\":\"shell\",\"input\":{\"command\":\"ls\"},\"origin\":\"native\"},\"call\":{\"id\":\"c%d\"},\"path\":\"main\"},\"capabilities\":{\"effects\":[\"deny\"]}}}`, i, i, i)
		fmt.Fprintf(w, `{"type":"frame","time":%q,"seq":%d,"direction":"harness","transport":"stdio","conn":"stdio:4242","raw":"%s"}`+"\n",
			start.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), i, raw)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Replay of a persistent backend's capture with 60,000 unanswered
// intercepts: every one after the first is STDIO-3 (naming the oldest
// outstanding, found without walking them all), the oldest pending
// requests are forgotten past the memory bound and counted in one TAP-1,
// and memory stays bounded (issue 28 item 8: quadratic, 20k took 8-9 s,
// 1M never finished; about 17 KB per unanswered request).
func TestReplayManyUnansweredIntercepts(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	if testing.Short() {
		t.Skip("a 40 MB capture")
	}
	p := pendingCapture(t, 60000)
	r, peak := runMeasured(t, "replay", "--fail-on", "never", p)
	t.Logf("peak RSS replaying 60,000 unanswered intercepts: %.1f MiB", peak)
	if r.code != 0 {
		t.Fatalf("replay: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "STDIO-3  59999 errors") {
		t.Errorf("want 59,999 STDIO-3 findings:\n%s", tailLines(r.stdout, 8))
	}
	if !strings.Contains(r.stdout, `#60000 sent by harness: error STDIO-3 at /id: hooks/intercept "evt-60000" was sent while hooks/intercept "evt-`) {
		t.Errorf("the last request's STDIO-3 is missing:\n%s", tailLines(r.stdout, 8))
	}
	if !strings.Contains(r.stdout, "unanswered requests were forgotten, the oldest first, to keep those pending within 128 MiB") {
		t.Errorf("no TAP-1 for the forgotten requests:\n%s", tailLines(r.stdout, 8))
	}
	if peak > 600 && !raceEnabled {
		t.Errorf("peak RSS %.1f MiB, want < 600 MiB", peak)
	}
}

func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
