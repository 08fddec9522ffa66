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
	hd := h.header()
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
