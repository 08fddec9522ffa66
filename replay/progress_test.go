package replay

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestProgressBar draws the bar on a writer that stands for a terminal,
// and nothing when it is off (not a terminal, or --quiet).
func TestProgressBar(t *testing.T) {
	data := strings.Repeat("x", 1<<20)
	var on bytes.Buffer
	p := NewProgress(&on, int64(len(data)), true)
	if n, err := io.Copy(io.Discard, p.Reader(strings.NewReader(data))); n != int64(len(data)) || err != nil {
		t.Fatalf("read through the bar: %d, %v", n, err)
	}
	for i := 0; i < 4096; i++ {
		p.frame()
	}
	p.Done()
	if !strings.Contains(on.String(), "%") || !strings.Contains(on.String(), "MB") || !strings.Contains(on.String(), "/1.0 MB") {
		t.Errorf("bar on a terminal drew %q, want a percentage and bytes", on.String())
	}
	var off bytes.Buffer
	p = NewProgress(&off, int64(len(data)), false)
	io.Copy(io.Discard, p.Reader(strings.NewReader(data)))
	p.frame()
	p.Done()
	if off.Len() != 0 {
		t.Errorf("bar off (not a terminal, or --quiet) wrote %q", off.String())
	}
}
