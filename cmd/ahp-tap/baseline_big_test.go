package main

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

// A baseline of 300,000 entries none of which occurs any more: the run
// fails (every entry is stale), stderr says so in one line with the count,
// the reports list the first entries and count the rest, and memory stays
// bounded (issue 28 item 9: a 1M-entry baseline took 4.67 GB and printed
// one stderr line per stale entry).
func TestHugeStaleBaseline(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	if testing.Short() {
		t.Skip("a 80 MB baseline")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "base.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	const n = 300000
	w.WriteString("{\n  \"version\": 1,\n  \"entries\": [\n")
	for i := range n {
		fp := sha256.Sum256(fmt.Appendf(nil, "%d", i))
		sep := ","
		if i == n-1 {
			sep = ""
		}
		fmt.Fprintf(w, `    {"check": "BASE-2", "fingerprint": "%x", "example": "#%d sent by backend at /result/protocolVersion: the successful result carries protocolVersion \"v0\", expected exactly \"draft\"", "count": 1}%s`+"\n", fp[:16], i, sep)
	}
	w.WriteString("  ]\n}\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sarif, junit := filepath.Join(dir, "r.sarif"), filepath.Join(dir, "r.xml")
	r, peak := runMeasured(t, "replay", "--baseline", p, "--report", "sarif="+sarif, "--report", "junit="+junit, "--fail-on", "never", exampleCapture)
	t.Logf("peak RSS with a %d-entry stale baseline: %.1f MiB", n, peak)
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (stale entries fail the run); stderr %q", r.code, r.stderr)
	}
	lines := 0
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "stale baseline entr") {
			lines++
		}
	}
	if got := lines; got != 1 || !strings.Contains(r.stderr, "300000 stale baseline entries") {
		t.Errorf("%d stderr lines about stale entries, want 1 with the count; stderr starts %q", got, r.stderr[:min(len(r.stderr), 600)])
	}
	for _, rep := range []string{sarif, junit} {
		st, err := os.Stat(rep)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(rep)
		if st.Size() > 1<<20 || !strings.Contains(string(data), "299980 more stale baseline entries") {
			t.Errorf("%s: %d bytes; want the first entries listed and the rest counted", rep, st.Size())
		}
	}
	if peak > 150 && !raceEnabled {
		t.Errorf("peak RSS %.1f MiB, want < 150 MiB", peak)
	}
}
