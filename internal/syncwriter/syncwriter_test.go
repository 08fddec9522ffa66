package syncwriter

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// Concurrent writes of whole lines come out as whole lines (the race
// detector also checks the buffer is never written concurrently).
func TestWholeLines(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			line := strings.Repeat(string(rune('a'+i)), 100) + "\n"
			for range 50 {
				w.Write([]byte(line))
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		if len(l) != 100 || strings.Count(l, l[:1]) != 100 {
			t.Fatalf("an interleaved line: %q", l)
		}
	}
}
