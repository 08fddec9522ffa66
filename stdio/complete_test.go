package stdio

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/e2e"
	"github.com/ahp-tap/ahp-tap/tap"
)

// countingRecorder counts the frames the auditor takes per direction and
// holds the audit goroutine on the first one until release is closed.
type countingRecorder struct {
	release chan struct{}
	once    sync.Once
	frames  [3]atomic.Int64
}

func (r *countingRecorder) Record(f *tap.Frame) {
	r.once.Do(func() { <-r.release })
	r.frames[f.Dir].Add(1)
}
func (r *countingRecorder) RecordNote(tap.Note) {}

// TestCompleteAuditAuditsEveryFrame pushes 100,000 lines through a cat
// backend with a tiny audit budget and queues, so every queue fills: with Complete, forwarding waits instead of
// dropping, so every line of both directions is audited, nothing is
// reported as not audited (TAP-1), and the bytes come back unchanged.
func TestCompleteAuditAuditsEveryFrame(t *testing.T) {
	e2e.Only(t) // a slow case (internal/e2e): CI runs it
	const n = 100000
	var in bytes.Buffer
	for i := range n {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"x","params":{"n":%d}}`+"\n", i)
	}
	// The auditor must not be stalled outright: with Complete the first
	// line is forwarded only once its audit copy is queued. Tiny queues
	// keep it saturated instead.
	rec := &countingRecorder{release: make(chan struct{})}
	close(rec.release)
	sink := &findings{}
	cfg := helperConfig("cat")
	cfg.Session = tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Sink: sink, Recorder: rec})
	cfg.Complete = true
	cfg.Queue, cfg.AuditBytes = 4, 4096
	cfg.ChunkQueue, cfg.ChunkBytes = 2, 64<<10
	_, inW, out, done := startAsync(t, cfg)
	go func() {
		inW.Write(in.Bytes())
		inW.Close()
	}()
	got := make([]byte, in.Len())
	first, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v", err)
	}
	copy(got, first)
	if _, err := io.ReadFull(out, got[len(first):]); err != nil {
		t.Fatalf("reading forwarded bytes: %v", err)
	}
	if !bytes.Equal(got, in.Bytes()) {
		t.Fatalf("forwarded bytes differ at %d", firstDiff(got, in.Bytes()))
	}
	res := <-done
	if res.NotAudited != 0 || res.ChunksDropped != 0 {
		t.Errorf("NotAudited = %d, ChunksDropped = %d, want 0 with Complete", res.NotAudited, res.ChunksDropped)
	}
	for _, d := range []tap.Direction{tap.FromHarness, tap.FromBackend} {
		if got := rec.frames[d].Load(); got != n {
			t.Errorf("%v: %d frames audited, want %d", d, got, n)
		}
	}
	if fs := sink.check("TAP-1"); len(fs) != 0 {
		t.Errorf("%d TAP-1 findings with Complete, want 0; first: %v", len(fs), fs[0])
	}
}
