package httpproxy

import (
	"bufio"
	"errors"
	"testing"
)

// headBuffered decides whether a request head is read with no deadline:
// it must never say yes to a head that readHead would have to read more
// of (a slow harness would then wait without --read-timeout).
func TestHeadBuffered(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"POST / HTTP/1.1\r\nHost: a\r\n\r\n", true},
		{"POST / HTTP/1.1\r\nHost: a\r\n\r\n{\"body\":1}", true},
		{"POST / HTTP/1.1\nHost: a\n\n", true},
		{"POST / HTTP/1.1\r\nHost: a\r\n", false},
		{"POST / HTTP/1.1\r\nHost: a\r\n\r", false},
		{"POST / HTTP/1.1", false},
		// Empty lines before a start line are skipped by readHead: they
		// are no end of a head.
		{"\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\n", false},
		{"\n\nPOST / HTTP/1.1\r\n", false},
		{"\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\n\r\n", false}, // whole, but said no: a deadline, as before
	} {
		br := bufio.NewReaderSize(&oneRead{s: tc.in}, 64)
		_, _ = br.Peek(1) // fill the buffer as the relay's first read does
		if got := headBuffered(br); got != tc.want {
			t.Errorf("headBuffered(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if tc.want {
			// readHead takes the head from the buffer alone: a second
			// read of the connection would fail.
			if _, _, err := readHead(br, nil, maxRequestHead); err != nil {
				t.Errorf("readHead(%q) after headBuffered: %v", tc.in, err)
			}
		}
	}
}

// oneRead gives its string in one read; any read after that fails.
type oneRead struct {
	s    string
	done bool
}

func (r *oneRead) Read(p []byte) (int, error) {
	if r.done {
		return 0, errors.New("a second read of the connection")
	}
	r.done = true
	return copy(p, r.s), nil
}
