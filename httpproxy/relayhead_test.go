package httpproxy

import (
	"fmt"
	"testing"
)

func TestHeadHeaderForTheAudit(t *testing.T) {
	raw := []byte("POST / HTTP/1.1\r\nhost: a\r\nx-rep: 1\r\nX-Other:  v \r\nX-REP: 2\r\nx-rep: 3\r\ncontent-type: application/json\r\n\r\n")
	var h head
	if err := h.parse(raw, true); err != nil {
		t.Fatal(err)
	}
	hd := h.hold().header()
	want := "map[Content-Type:[application/json] Host:[a] X-Other:[v] X-Rep:[1 2 3]]"
	if got := fmt.Sprint(hd); got != want {
		t.Errorf("header() = %s, want %s", got, want)
	}
}

func TestHeadSyntaxErrors(t *testing.T) {
	for _, raw := range []string{
		"POST / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n",
		"POST / HTTP/1.1\r\nX-A : 1\r\n\r\n",
		"POST / HTTP/1.1\r\nX-A: a\x01b\r\n\r\n",
		"POST / HTTP/1.1\r\nX-A: 1\n\r\n",
		"POST / HTTP/1.1\r\nX-A: a\rb\r\n\r\n",
		"POST / HTTP/1.1\r\nno colon\r\n\r\n",
	} {
		var h head
		if err := h.parse([]byte(raw), true); err == nil {
			t.Errorf("parse(%q) = nil, want an error", raw)
		}
	}
	for _, tc := range []struct{ raw, why string }{
		{"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", "both"},
		{"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "two different"},
		{"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "other than chunked"},
		{"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", "invalid"},
		{"POST / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "two Host"},
	} {
		var h head
		if err := h.parse([]byte(tc.raw), true); err != nil {
			t.Fatal(err)
		}
		if err := h.interpret(true); err == nil {
			t.Errorf("interpret(%q) = nil, want an error (%s)", tc.raw, tc.why)
		}
	}
}

func TestChunkSize(t *testing.T) {
	for _, tc := range []struct {
		line string
		n    int64
		ok   bool
	}{
		{"1a\r\n", 26, true}, {"1A;x=y\r\n", 26, true}, {"0010 ; q\r\n", 16, true}, {"0\n", 0, true},
		{"\r\n", 0, false}, {"x\r\n", 0, false}, {"1 2\r\n", 0, false}, {"1\r2\r\n", 0, false},
		{"fffffffffffffffff\r\n", 0, false}, {"-1\r\n", 0, false},
	} {
		n, err := chunkSize([]byte(tc.line))
		if (err == nil) != tc.ok || n != tc.n {
			t.Errorf("chunkSize(%q) = %d, %v; want %d, ok=%v", tc.line, n, err, tc.n, tc.ok)
		}
	}
}
