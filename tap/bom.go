package tap

import (
	"bufio"
	"bytes"
)

// BOM is the UTF-8 byte order mark. RFC 8259 §8.1 lets a parser ignore it
// at the start of a JSON text, and editors on Windows (and some HAR
// exporters) write one: ahp-tap ignores it at the start of every JSON
// document it reads from a file (HAR, registration, capture, log,
// baseline, message), never on the wire, where a frame starting with one
// is a framing fault.
var BOM = []byte("\xef\xbb\xbf")

// TrimBOM returns data without a leading UTF-8 byte order mark.
func TrimBOM(data []byte) []byte { return bytes.TrimPrefix(data, BOM) }

// SkipBOM consumes a UTF-8 byte order mark at the start of br, if there is
// one, and reports whether it did.
func SkipBOM(br *bufio.Reader) bool {
	if b, _ := br.Peek(len(BOM)); bytes.Equal(b, BOM) {
		br.Discard(len(BOM))
		return true
	}
	return false
}
