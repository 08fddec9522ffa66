package httpproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// endWatcher is a receiver that notes, at the write that completes the
// body, whether the copy had already said the body was read whole.
type endWatcher struct {
	want, got    int
	ended        bool
	endedAtLast  bool
	sawLastWrite bool
}

func (w *endWatcher) Write(p []byte) (int, error) {
	w.got += len(p)
	if w.got == w.want {
		w.sawLastWrite, w.endedAtLast = true, w.ended
	}
	return len(p), nil
}

// The relay decides whether a harness connection stays open from "the
// request body was read whole" while the upstream may already answer: the
// copy must say so before the write that gives the upstream the whole
// body, never after (soak: a reused connection closed under a harness,
// EOF on its next request).
func TestBodyCopySaysReadBeforeTheLastWrite(t *testing.T) {
	big := strings.Repeat("x", 3*relayOutBuf+123)
	chunkedBody := fmt.Sprintf("%x\r\n%s\r\n0\r\nTrailer-A: 1\r\n\r\n", len(big), big)
	cases := []struct {
		name, wire string
		f          framing
		length     int64
		readBuf    int
	}{
		{"small Content-Length body", `{"jsonrpc":"2.0"}`, fixedBody, 17, 64},
		{"large Content-Length body, last piece written without a copy", big, fixedBody, int64(len(big)), 2 * relayOutBuf},
		{"chunked body with trailers", chunkedBody, chunked, -1, 2 * relayOutBuf},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &endWatcher{want: len(tc.wire)}
			calls := 0
			bc := bodyCopy{
				dst:   w,
				src:   bufio.NewReaderSize(strings.NewReader(tc.wire), tc.readBuf),
				out:   make([]byte, 0, relayOutBuf),
				audit: func([]byte) {},
				read:  func() { w.ended = true; calls++ },
			}
			if err := bc.copyBody(tc.f, tc.length); err != nil {
				t.Fatal(err)
			}
			if !w.sawLastWrite {
				t.Fatalf("receiver got %d bytes, want %d", w.got, w.want)
			}
			if !w.endedAtLast {
				t.Error("the write completing the body went out before the copy said the body was read whole")
			}
			if calls != 1 {
				t.Errorf("read called %d times, want once", calls)
			}
		})
	}
}

// Chunk data inside chunked framing is not the end of the body: read is
// called once the trailer section's empty line has been read, nothing
// of the body left to read.
func TestBodyCopyChunkDataIsNotTheEnd(t *testing.T) {
	wire := "3\r\nabc\r\n3\r\ndef\r\n0\r\nX-T: 1\r\n\r\n"
	src := bufio.NewReader(strings.NewReader(wire))
	left := -1
	w := &bytes.Buffer{}
	bc := bodyCopy{dst: w, src: src, out: make([]byte, 0, relayOutBuf),
		audit: func([]byte) {}, read: func() { left = src.Buffered() }}
	if err := bc.copyBody(chunked, -1); err != nil {
		t.Fatal(err)
	}
	if w.String() != wire {
		t.Fatalf("copied %q, want %q", w.String(), wire)
	}
	if left != 0 {
		t.Errorf("read called with %d bytes of the body still to read (-1: never), want 0", left)
	}
}
