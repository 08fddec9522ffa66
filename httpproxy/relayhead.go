package httpproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/ahp-tap/ahp-tap/httpaudit"
)

// The relay's HTTP/1.1 message heads (RFC 9112 §2–5). A head is kept as the
// bytes that came off the wire plus spans into them, so that what goes out
// is those bytes, less the hop-by-hop fields and with the documented
// rewrites (docs/http.md, "What the tap may change").

// errHeadTooLarge says a head did not end within the byte limit.
var errHeadTooLarge = errors.New("message head too large")

// An hspan is a half-open byte range [s, e) of a head's raw bytes.
type hspan struct{ s, e int }

// A field is one field line of a head.
type field struct {
	line  hspan // the whole line, line terminator included
	name  hspan
	value hspan // without leading and trailing whitespace
	drop  bool  // hop-by-hop: not forwarded
}

// framing says how a message body is delimited (RFC 9112 §6.3).
type framing uint8

const (
	noBody    framing = iota
	fixedBody         // Content-Length bytes
	chunked           // Transfer-Encoding: chunked, copied as it came
	untilEOF          // close-delimited (responses only)
)

// A head is one parsed request or response head.
type head struct {
	raw    []byte   // the head as received, through the empty line
	first  hspan    // the start line without its terminator
	parts  [3]hspan // request: method, target, version; response: version, status, reason
	fields []field

	status     int // responses
	minor      int // the HTTP/1.x minor version
	framing    framing
	length     int64 // fixedBody
	host       int   // index in fields of the Host line, -1 for none
	connClose  bool  // Connection: close
	keepAlive  bool  // Connection: keep-alive (an HTTP/1.0 response)
	expect100  bool  // Expect: 100-continue
	hasTrailer bool  // a Trailer field announces trailers
}

// readHead reads one head from br into buf (reused) and returns it. n is
// how many bytes were read, so that a caller can tell an empty connection
// (n == 0) from a broken one.
func readHead(br *bufio.Reader, buf []byte, limit int) (raw []byte, n int, err error) {
	raw = buf[:0]
	lineStart := 0 // where the line being read began in raw
	for {
		chunk, err := br.ReadSlice('\n')
		raw = append(raw, chunk...)
		n += len(chunk)
		if len(raw) > limit {
			return raw, n, errHeadTooLarge
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue // the same line goes on
		case err != nil:
			return raw, n, err
		}
		line := raw[lineStart:]
		empty := len(line) == 1 || len(line) == 2 && line[0] == '\r'
		switch {
		case empty && lineStart == 0:
			// RFC 9112 §2.2: empty lines before a start line are ignored.
			raw = raw[:0]
		case empty:
			return raw, n, nil
		default:
			lineStart = len(raw)
		}
	}
}

// parseHead splits raw into its start line and field lines, and checks the
// syntax: CRLF line ends (strictCRLF) or LF alone, no obs-fold, no
// whitespace before a colon, token names and values free of control
// characters. It fills h.fields and h.first; the caller interprets them.
func (h *head) parse(raw []byte, strictCRLF bool) error {
	h.raw = raw
	h.fields = h.fields[:0]
	h.host = -1
	i := 0
	first := true
	for i < len(raw) {
		j := bytes.IndexByte(raw[i:], '\n')
		if j < 0 {
			return errors.New("unterminated line")
		}
		end := i + j // index of '\n'
		text := end
		if text > i && raw[text-1] == '\r' {
			text--
		} else if strictCRLF {
			return errors.New("a line ends in LF without CR")
		}
		if text == i { // the empty line ends the head
			if end+1 != len(raw) {
				return errors.New("bytes after the empty line")
			}
			return nil
		}
		if bytes.IndexByte(raw[i:text], '\r') >= 0 {
			return errors.New("a bare CR inside a line")
		}
		if first {
			h.first = hspan{i, text}
			first = false
		} else {
			if raw[i] == ' ' || raw[i] == '\t' {
				return errors.New("obsolete line folding (obs-fold)")
			}
			c := bytes.IndexByte(raw[i:text], ':')
			if c <= 0 {
				return errors.New("a field line without a name and colon")
			}
			name := hspan{i, i + c}
			for _, b := range raw[name.s:name.e] {
				if !isTokenChar(b) {
					return fmt.Errorf("field name %q is not a token", raw[name.s:name.e])
				}
			}
			vs, ve := i+c+1, text
			for vs < ve && (raw[vs] == ' ' || raw[vs] == '\t') {
				vs++
			}
			for ve > vs && (raw[ve-1] == ' ' || raw[ve-1] == '\t') {
				ve--
			}
			for _, b := range raw[vs:ve] {
				if b < ' ' && b != '\t' || b == 0x7f {
					return fmt.Errorf("field %q holds a control character", raw[name.s:name.e])
				}
			}
			h.fields = append(h.fields, field{line: hspan{i, end + 1}, name: name, value: hspan{vs, ve}})
		}
		i = end + 1
	}
	return errors.New("no empty line")
}

func isTokenChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), b) >= 0
}

func (h *head) name(f *field) []byte  { return h.raw[f.name.s:f.name.e] }
func (h *head) value(f *field) []byte { return h.raw[f.value.s:f.value.e] }

// hopByHop reports whether a field name is connection-specific and is not
// forwarded (RFC 9110 §7.6.1), whatever the Connection field says.
// Transfer-Encoding is hop-by-hop too, but the relay forwards each body in
// the framing it came in, so the field that names it goes with it.
func hopByHop(name []byte) bool {
	for _, h := range hopFields {
		if bytes.EqualFold(name, h) {
			return true
		}
	}
	return false
}

var hopFields = [][]byte{
	[]byte("Connection"), []byte("Keep-Alive"), []byte("Proxy-Connection"), []byte("TE"), []byte("Upgrade"),
	[]byte("Proxy-Authorization"), []byte("Proxy-Authenticate"), []byte("Proxy-Authentication-Info"),
	[]byte("HTTP2-Settings"), // RFC 9113 §3.2.1: only meaningful with Upgrade: h2c
}

// hopHeaderNames is hopFields for net/http's header maps (canonical keys).
var hopHeaderNames = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Upgrade",
	"Proxy-Authorization", "Proxy-Authenticate", "Proxy-Authentication-Info", "Http2-Settings"}

// interpret reads the fields that matter to the relay: framing, Host,
// Connection and the names it lists, Expect. request says which kind of
// head it is. An error is a message the relay must not forward as it is.
func (h *head) interpret(request bool) error {
	var (
		cl      int64 = -1
		te      []byte
		teCount int
	)
	for i := range h.fields {
		f := &h.fields[i]
		n, v := h.name(f), h.value(f)
		switch {
		case bytes.EqualFold(n, []byte("Content-Length")):
			l, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || l < 0 || len(v) == 0 || v[0] == '+' {
				return fmt.Errorf("invalid Content-Length %q", v)
			}
			if cl >= 0 && cl != l {
				return errors.New("two different Content-Length values")
			}
			cl = l
		case bytes.EqualFold(n, []byte("Transfer-Encoding")):
			te, teCount = v, teCount+1
		case bytes.EqualFold(n, []byte("Host")):
			if h.host >= 0 {
				return errors.New("two Host fields")
			}
			h.host = i
		case bytes.EqualFold(n, []byte("Connection")):
			for _, opt := range bytes.Split(v, []byte(",")) {
				opt = bytes.TrimSpace(opt)
				switch {
				case bytes.EqualFold(opt, []byte("close")):
					h.connClose = true
				case bytes.EqualFold(opt, []byte("keep-alive")):
					h.keepAlive = true
				}
			}
		case bytes.EqualFold(n, []byte("Expect")):
			h.expect100 = bytes.EqualFold(v, []byte("100-continue"))
		case bytes.EqualFold(n, []byte("Trailer")):
			h.hasTrailer = true
		}
		if hopByHop(n) {
			f.drop = true
		}
	}
	// The names a Connection field lists are hop-by-hop as well.
	for i := range h.fields {
		f := &h.fields[i]
		if !bytes.EqualFold(h.name(f), []byte("Connection")) {
			continue
		}
		for _, opt := range bytes.Split(h.value(f), []byte(",")) {
			opt = bytes.TrimSpace(opt)
			if len(opt) == 0 || bytes.EqualFold(opt, []byte("close")) || bytes.EqualFold(opt, []byte("keep-alive")) {
				continue
			}
			for k := range h.fields {
				if n := h.name(&h.fields[k]); bytes.EqualFold(n, opt) && !isFraming(n) {
					h.fields[k].drop = true
				}
			}
		}
	}
	switch {
	case teCount > 0 && cl >= 0:
		// RFC 9112 §6.1: a request smuggling vector; refuse it rather than
		// guess which framing the next hop would believe.
		return errors.New("both Transfer-Encoding and Content-Length")
	case teCount > 1 || teCount == 1 && !bytes.EqualFold(te, []byte("chunked")):
		if request {
			return fmt.Errorf("a Transfer-Encoding other than chunked alone (%q)", te)
		}
		h.framing = untilEOF // RFC 9112 §6.3 item 4
	case teCount == 1:
		h.framing = chunked
	case cl > 0:
		h.framing, h.length = fixedBody, cl
	case cl == 0 || request:
		h.framing = noBody
	default:
		h.framing = untilEOF
	}
	return nil
}

// isFraming reports whether a Connection option names a field the relay
// needs to delimit the message; those are never dropped.
func isFraming(name []byte) bool {
	return bytes.EqualFold(name, []byte("Content-Length")) || bytes.EqualFold(name, []byte("Transfer-Encoding")) ||
		bytes.EqualFold(name, []byte("Host"))
}

// parseRequestLine splits the request line: method SP target SP HTTP/1.1.
// It accepts only origin-form targets ("/path?query"); absolute-form,
// authority-form (CONNECT) and asterisk-form are declined.
func (h *head) parseRequestLine() error {
	line := h.raw[h.first.s:h.first.e]
	a := bytes.IndexByte(line, ' ')
	if a <= 0 {
		return errors.New("request line without a method")
	}
	b := bytes.IndexByte(line[a+1:], ' ')
	if b <= 0 {
		return errors.New("request line without a target")
	}
	b += a + 1
	h.parts[0] = hspan{h.first.s, h.first.s + a}
	h.parts[1] = hspan{h.first.s + a + 1, h.first.s + b}
	h.parts[2] = hspan{h.first.s + b + 1, h.first.e}
	for _, c := range line[:a] {
		if !isTokenChar(c) {
			return errors.New("method is not a token")
		}
	}
	target := line[a+1 : b]
	if target[0] != '/' {
		return errors.New("target is not in origin form")
	}
	for _, c := range target {
		if c <= ' ' || c == 0x7f {
			return errors.New("target holds a space or control character")
		}
	}
	if !bytes.Equal(line[b+1:], []byte("HTTP/1.1")) {
		return errors.New("not HTTP/1.1")
	}
	h.minor = 1
	return nil
}

// parseStatusLine splits the status line: HTTP/1.x SP 3DIGIT SP reason.
func (h *head) parseStatusLine() error {
	line := h.raw[h.first.s:h.first.e]
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || len(line) > 12 && line[12] != ' ' {
		return fmt.Errorf("malformed status line %q", truncate(line, 64))
	}
	switch line[7] {
	case '0':
		h.minor = 0
	case '1':
		h.minor = 1
	default:
		return fmt.Errorf("unsupported version in status line %q", truncate(line, 64))
	}
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return fmt.Errorf("malformed status code in %q", truncate(line, 64))
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 {
		return fmt.Errorf("status code %d", code)
	}
	h.status = code
	h.parts[0] = hspan{h.first.s, h.first.s + 8}
	h.parts[1] = hspan{h.first.s + 9, h.first.s + 12}
	h.parts[2] = hspan{min(h.first.s+13, h.first.e), h.first.e}
	return nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// appendForwarded appends the head as it goes to the next hop: every line
// as received, in order, less the dropped fields; target and host, when
// not nil, replace the request target and the Host field's value.
func (h *head) appendForwarded(out, target, host []byte) []byte {
	pos := 0
	if target != nil {
		t := h.parts[1]
		out = append(out, h.raw[:t.s]...)
		out = append(out, target...)
		pos = t.e
	}
	for i := range h.fields {
		f := &h.fields[i]
		switch {
		case f.drop:
			out = append(out, h.raw[pos:f.line.s]...)
			pos = f.line.e
		case i == h.host && host != nil:
			out = append(out, h.raw[pos:f.value.s]...)
			out = append(out, host...)
			pos = f.value.e
		}
	}
	return append(out, h.raw[pos:]...)
}

// A heldHead is a message head's fields kept for the audit envelope: an
// http.Header (the net/http path's copy), or the relay's head as received
// and its field spans, made into an http.Header only on the audit side
// (header), so that the forwarding goroutine only copies two slices.
type heldHead struct {
	h   http.Header // the net/http path's
	raw string      // the relay's head ("" on the net/http path)
}

// hold keeps h for the audit side: the relay reuses h. Only the bytes are
// copied; the fields are found again in them where needed, which
// costs less than a copy of the spans on the forwarding goroutine
// (nextField).
func (h *head) hold() heldHead {
	return heldHead{raw: string(h.raw)}
}

// nextField returns the name and value of the first field line in rest
// (a held relay head's lines after its start line: fieldLines) and the
// lines after it; ok is false at the empty line that ends the head. The
// head was parsed (head.parse): its lines end in LF or CRLF, a name runs
// up to the first colon, and a value is trimmed of spaces and tabs. A
// loop, not an iterator: the audit side's range-over-func closure
// allocated.
func nextField(rest string) (name, value, next string, ok bool) {
	line, next, _ := strings.Cut(rest, "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", "", "", false
	}
	name, value, _ = strings.Cut(line, ":")
	return name, strings.Trim(value, " \t"), next, true
}

// fieldLines is a held relay head less its start line.
func (hh heldHead) fieldLines() string {
	_, rest, _ := strings.Cut(hh.raw, "\n")
	return rest
}

// learn remembers the credentials the fields carry.
func (hh heldHead) learn(c *httpaudit.Credentials) {
	if hh.raw == "" {
		c.Add(hh.h)
		return
	}
	for name, value, rest, ok := nextField(hh.fieldLines()); ok; name, value, rest, ok = nextField(rest) {
		c.AddField(name, value)
	}
}

// header returns the fields as an http.Header for the audit envelope:
// canonical names (the rules look names up that way), values as received,
// every field including the hop-by-hop ones (the audit records what the
// peer sent). The header is the caller's to change.
func (hh heldHead) header() http.Header {
	if hh.raw == "" {
		return hh.h
	}
	// The names and values are substrings of raw, and one array holds
	// every value slice: two allocations per head instead of two per
	// field.
	n := max(strings.Count(hh.raw, "\n")-2, 0) // less the start line and the empty line
	vals := make([]string, 0, n)
	hd := make(http.Header, n)
	for name, value, rest, ok := nextField(hh.fieldLines()); ok; name, value, rest, ok = nextField(rest) {
		k := commonKey(name)
		if k == "" {
			k = textproto.CanonicalMIMEHeaderKey(name)
		}
		vals = append(vals, value)
		i := len(vals) - 1
		if prev, ok := hd[k]; ok {
			hd[k] = append(prev, vals[i]) // prev's capacity is 1: this copies
		} else {
			hd[k] = vals[i : i+1 : i+1]
		}
	}
	return hd
}

// commonNames are field names frequent enough on AHP traffic to be worth
// not allocating a key for.
var commonNames = []string{"Host", "Content-Type", "Content-Length", "Authorization", "User-Agent", "Accept",
	"Accept-Encoding", "Date", "Connection", "Transfer-Encoding", "Server", "Expect"}

// commonKey returns the canonical form of name when it is a common one,
// else "".
func commonKey(name string) string {
	for _, c := range commonNames {
		if len(c) == len(name) && strings.EqualFold(name, c) {
			return c
		}
	}
	return ""
}

// bodyless reports whether a response to method carries no body whatever
// its fields say (RFC 9112 §6.3 items 1–2).
func bodyless(method []byte, status int) bool {
	return status < 200 || status == http.StatusNoContent || status == http.StatusNotModified ||
		bytes.Equal(method, []byte("HEAD"))
}
