package har

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// What a HAR reader holds is bounded in bytes whatever the file holds
// (issue 28 item 5: a 1 MiB .har.gz inflating to a 1 GiB base64 body took
// 4.2 GB). The JSON text is cut while it is read, before any decoder holds
// it: a string longer than maxString is kept as its first maxString bytes
// and marked (cutMark), so that a body is audited as a truncated copy
// (TAP-1), as the HTTP tap audits a body past --max-audit-body.

// maxString is the longest JSON string (escaped, as in the file) a HAR
// reader keeps: enough for a base64 body of MaxAuditBody bytes.
const maxString = (MaxAuditBody+2)/3*4 + 64

// maxEntry bounds the bytes of one entry kept besides what maxString cuts:
// the two bodies at most maxString each, and the rest (URL, headers,
// timings) in what remains. A longer entry (hundreds of thousands of
// headers, say) is not audited: the HAR is refused with one line.
const maxEntry = 2*maxString + 16<<20

// cutMark ends a string that was cut: a JSON escape (NUL) no HAR exporter
// writes at the end of a text, then a word saying why. Only the reader's
// own checks look for it.
const cutMark = `\u0000ahp-tap:cut`

// cutText reports whether a decoded string was cut, and returns it
// without the mark.
func cutText(s string) (string, bool) {
	const decoded = "\x00ahp-tap:cut"
	if strings.HasSuffix(s, decoded) {
		return s[:len(s)-len(decoded)], true
	}
	return s, false
}

// errEntryTooLarge is returned when one entry is larger than maxEntry
// once its long strings are cut.
var errEntryTooLarge = errors.New("entry too large")

// A cutter copies JSON text, cutting every string longer than maxString
// (at a character boundary outside an escape) and counting the bytes of
// each value nested in an entry. It follows only what the cut needs:
// strings, escapes and nesting; the decoder reading its output judges the
// rest.
type cutter struct {
	r   *bufio.Reader
	err error

	inString bool
	escape   bool // after a backslash
	hex      int  // hex digits of a \u escape still to come
	strLen   int  // bytes of the current string kept so far
	cutting  bool // the rest of the current string is dropped
	depth    int  // nesting outside strings
	entry    int  // bytes kept of the value nested at depth >= 4 (an entry)

	out     []byte
	pending []byte // output not yet returned
}

func newCutter(r io.Reader) *cutter {
	return &cutter{r: bufio.NewReaderSize(r, 64<<10)}
}

func (c *cutter) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		c.fill()
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// fill transforms the next chunk of input into pending.
func (c *cutter) fill() {
	in, _ := c.r.Peek(c.r.Buffered())
	if len(in) == 0 {
		if _, err := c.r.Peek(1); err != nil {
			c.err = err
			return
		}
		in, _ = c.r.Peek(c.r.Buffered())
	}
	c.out = c.out[:0]
	for i := 0; i < len(in); i++ {
		b := in[i]
		if c.inString {
			if c.cutting && !c.escape && c.hex == 0 {
				// Skip to the next byte that matters: a quote or a
				// backslash.
				j := i
				for j < len(in) && in[j] != '"' && in[j] != '\\' {
					j++
				}
				if j == len(in) {
					break
				}
				i, b = j, in[j]
			}
			keep := !c.cutting
			switch {
			case c.hex > 0:
				c.hex--
			case c.escape:
				c.escape = false
				if b == 'u' {
					c.hex = 4
				}
			case b == '\\':
				c.escape = true
			case b == '"':
				c.inString = false
				if c.cutting {
					c.out = append(c.out, cutMark...)
				}
				c.out = append(c.out, '"')
				c.count(len(cutMark) + 1)
				continue
			}
			if keep {
				c.out = append(c.out, b)
				c.strLen++
				c.count(1)
				if c.strLen >= maxString && !c.escape && c.hex == 0 {
					c.cutting = true
				}
			}
			continue
		}
		switch b {
		case '"':
			c.inString, c.strLen, c.cutting = true, 0, false
		case '{', '[':
			c.depth++
		case '}', ']':
			c.depth--
		}
		c.out = append(c.out, b)
		c.count(1)
		if c.depth <= 3 {
			c.entry = 0
		}
	}
	c.r.Discard(len(in))
	c.pending = c.out
	if c.entry > maxEntry {
		c.err = fmt.Errorf("%w: an entry holds more than %d MiB besides bodies of up to %d MiB (the audit bound); it is not read", errEntryTooLarge, (maxEntry-2*maxString)>>20, MaxAuditBody>>20)
		c.pending = nil
	}
}

func (c *cutter) count(n int) {
	if c.depth >= 4 {
		c.entry += n
	}
}
