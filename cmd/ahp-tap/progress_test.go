package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestProgressBar(t *testing.T) {
	data := strings.Repeat("x", 1<<20)
	var on bytes.Buffer
	p := newProgress(&on, int64(len(data)), true)
	if n, err := io.Copy(io.Discard, p.reader(strings.NewReader(data))); n != int64(len(data)) || err != nil {
		t.Fatalf("read through the bar: %d, %v", n, err)
	}
	for i := 0; i < 4096; i++ {
		p.frame()
	}
	p.done()
	if !strings.Contains(on.String(), "%") || !strings.Contains(on.String(), "MB") || !strings.Contains(on.String(), "/1.0 MB") {
		t.Errorf("bar on a terminal drew %q, want a percentage and bytes", on.String())
	}
	var off bytes.Buffer
	p = newProgress(&off, int64(len(data)), false)
	io.Copy(io.Discard, p.reader(strings.NewReader(data)))
	p.frame()
	p.done()
	if off.Len() != 0 {
		t.Errorf("bar off (not a terminal, or --quiet) wrote %q", off.String())
	}
	// replay's stderr in tests is a pipe: no bar, whatever the input size.
	r := runTap(t, "", "replay", "--fail-on", "never", exampleCapture)
	if strings.Contains(r.stderr, "%") {
		t.Errorf("replay drew a progress bar on a pipe: %q", r.stderr)
	}
}
