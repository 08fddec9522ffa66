package httpproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Limits of the chunked framing the relay copies: a chunk-size line with
// its extensions, and the whole trailer section.
const (
	maxChunkLine = 4 << 10
	maxTrailers  = 64 << 10
)

// A bodyCopy copies one message body from src to dst in the framing it
// came in, byte for byte, and hands the decoded body bytes (chunk data
// without the chunking) to audit. Bytes go out as they come: whatever is
// pending is written before any read that could wait (issue 8: bytes the
// upstream flushed reach the harness at once).
type bodyCopy struct {
	dst   io.Writer
	src   *bufio.Reader
	out   []byte       // pending output; may start with a head
	audit func([]byte) // decoded body bytes; must not retain them
	werr  error        // the first write error: the receiving side failed
	// read, when set, is called once the body has been read to its end,
	// before the bytes that complete it are written: whoever waits for
	// the receiver's answer must know the body was read whole before the
	// receiver can have it whole (a request copier's last write and the
	// relay's keep-alive decision race otherwise).
	read    func()
	chunkIn bool // inside chunked framing: data() is one chunk, not the body
	// pace, when set, is called with the bytes read so far before every
	// read that could wait: a request body's copier sets the harness
	// connection's read deadline from it (slow bodies are bounded).
	pace func(got int64)
	got  int64 // bytes read from src so far
}

// ended calls read, once.
func (b *bodyCopy) ended() {
	if b.read != nil {
		b.read()
		b.read = nil
	}
}

// errWrite marks a failure of the receiving side in bodyCopy's results.
var errWrite = errors.New("write failed")

// flush writes what is pending.
func (b *bodyCopy) flush() error {
	if len(b.out) == 0 {
		return nil
	}
	n, err := b.dst.Write(b.out)
	if err == nil && n != len(b.out) {
		err = io.ErrShortWrite
	}
	b.out = b.out[:0]
	if err != nil {
		b.werr = err
		return errWrite
	}
	return nil
}

// emit queues p for writing, writing first when the buffer is full. When
// nothing is pending and p would fill the buffer, p is written as it is,
// without a copy: the buffer only gathers heads, framing lines and small
// bodies into one write, so it can stay small (issue 10: per-exchange
// buffers are outside the audit budget).
func (b *bodyCopy) emit(p []byte) error {
	for len(p) > 0 {
		if len(b.out) == 0 && len(p) >= cap(b.out) {
			n, err := b.dst.Write(p)
			if err == nil && n != len(p) {
				err = io.ErrShortWrite
			}
			if err != nil {
				b.werr = err
				return errWrite
			}
			return nil
		}
		if len(b.out) == cap(b.out) {
			if err := b.flush(); err != nil {
				return err
			}
		}
		k := min(len(p), cap(b.out)-len(b.out))
		b.out = append(b.out, p[:k]...)
		p = p[k:]
	}
	return nil
}

// fill makes at least one byte readable, writing what is pending before
// it waits.
func (b *bodyCopy) fill() error {
	if b.src.Buffered() > 0 {
		return nil
	}
	if err := b.flush(); err != nil {
		return err
	}
	if b.pace != nil {
		b.pace(b.got)
	}
	_, err := b.src.Peek(1)
	return err
}

// data copies n body bytes.
func (b *bodyCopy) data(n int64) error {
	for n > 0 {
		if err := b.fill(); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		p, _ := b.src.Peek(int(min(int64(b.src.Buffered()), n)))
		b.audit(p)
		if int64(len(p)) == n && !b.chunkIn {
			b.ended()
		}
		if err := b.emit(p); err != nil {
			return err
		}
		b.src.Discard(len(p))
		b.got += int64(len(p))
		n -= int64(len(p))
	}
	return nil
}

// untilEOF copies a close-delimited body.
func (b *bodyCopy) untilEOF() error {
	for {
		if err := b.fill(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		p, _ := b.src.Peek(b.src.Buffered())
		b.audit(p)
		if err := b.emit(p); err != nil {
			return err
		}
		b.src.Discard(len(p))
		b.got += int64(len(p))
	}
}

// line copies one line of chunked framing (a chunk-size line, the CRLF
// after chunk data, a trailer line) and returns it as it came.
func (b *bodyCopy) line(limit int) ([]byte, error) { return b.lineOf(limit, false) }

// lineOf is line; last says an empty line ends the body (the trailer
// section's end).
func (b *bodyCopy) lineOf(limit int, last bool) ([]byte, error) {
	if buf, _ := b.src.Peek(b.src.Buffered()); bytes.IndexByte(buf, '\n') < 0 {
		if err := b.flush(); err != nil {
			return nil, err
		}
		if b.pace != nil {
			b.pace(b.got)
		}
	}
	l, err := b.src.ReadSlice('\n')
	b.got += int64(len(l))
	switch {
	case err == bufio.ErrBufferFull || len(l) > limit:
		return nil, errors.New("chunked framing: line too long")
	case err == io.EOF:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	}
	if last && isEmptyLine(l) {
		b.ended()
	}
	if err := b.emit(l); err != nil {
		return nil, err
	}
	return l, nil
}

// chunked copies a chunked body (RFC 9112 §7.1): chunk-size lines with
// their extensions, chunk data, the last chunk and the trailer section,
// all as they came; only the chunk data goes to the audit.
func (b *bodyCopy) chunked() error {
	b.chunkIn = true
	defer func() { b.chunkIn = false }()
	for {
		l, err := b.line(maxChunkLine)
		if err != nil {
			return err
		}
		size, err := chunkSize(l)
		if err != nil {
			return err
		}
		if size == 0 {
			break
		}
		if err := b.data(size); err != nil {
			return err
		}
		if l, err = b.line(2); err != nil {
			return err
		}
		if !isEmptyLine(l) {
			return errors.New("chunked framing: chunk data not followed by CRLF")
		}
	}
	total := 0
	for {
		l, err := b.lineOf(maxTrailers, true)
		if err != nil {
			return err
		}
		if isEmptyLine(l) {
			return nil
		}
		if total += len(l); total > maxTrailers {
			return errors.New("chunked framing: trailer section too large")
		}
		if l[0] == ' ' || l[0] == '\t' || bytes.IndexByte(l, ':') <= 0 {
			return fmt.Errorf("chunked framing: malformed trailer line %q", truncate(l, 64))
		}
	}
}

func isEmptyLine(l []byte) bool {
	return len(l) == 1 || len(l) == 2 && l[0] == '\r'
}

// chunkSize parses a chunk-size line: hex digits, then optional
// whitespace and extensions.
func chunkSize(l []byte) (int64, error) {
	l = bytes.TrimSuffix(bytes.TrimSuffix(l, []byte("\n")), []byte("\r"))
	if bytes.IndexByte(l, '\r') >= 0 {
		return 0, errors.New("chunked framing: bare CR in a chunk-size line")
	}
	var n int64
	i := 0
	for ; i < len(l); i++ {
		d := hexDigit(l[i])
		if d < 0 {
			break
		}
		if n > (1<<62)>>4 {
			return 0, errors.New("chunked framing: chunk size too large")
		}
		n = n<<4 | int64(d)
	}
	if i == 0 {
		return 0, fmt.Errorf("chunked framing: malformed chunk size %q", truncate(l, 64))
	}
	rest := bytes.TrimLeft(l[i:], " \t")
	if len(rest) > 0 && rest[0] != ';' {
		return 0, fmt.Errorf("chunked framing: malformed chunk size %q", truncate(l, 64))
	}
	return n, nil
}

// hexDigit is the value of a hex digit, or -1.
func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// copyBody copies a body in framing f.
func (b *bodyCopy) copyBody(f framing, length int64) error {
	var err error
	switch f {
	case fixedBody:
		err = b.data(length)
	case chunked:
		err = b.chunked()
	case untilEOF:
		err = b.untilEOF()
	}
	if err != nil {
		return err
	}
	return b.flush()
}

// discardUpTo accepts at most n bytes and fails past them: an upstream
// failure's request body is drained for the audit only as far as the audit
// copy goes.
type discardUpTo struct{ n int64 }

func (d *discardUpTo) Write(p []byte) (int, error) {
	if int64(len(p)) > d.n {
		return 0, errors.New("more body than the audit copy holds")
	}
	d.n -= int64(len(p))
	return len(p), nil
}
