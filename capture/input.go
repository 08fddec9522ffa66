package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ahp-tap/ahp-tap/tap"
)

// What an input file holds, recognised by its content (DetectKind), the
// same way for check and replay.
const (
	KindCapture      = "capture"       // an ahp-tap capture (header record first)
	KindStream       = "stream"        // NDJSON: a stdio byte stream
	KindMessage      = "message"       // one JSON-RPC message
	KindRegistration = "registration"  // a registration document
	KindLog          = "violation log" // findings written by --log: not traffic
	KindEmpty        = "empty"         // nothing but white space
	KindBinary       = "binary"        // not text: not traffic
	KindHAR          = "har"           // an HTTP Archive
)

// peekSize is how much of an input DetectKind looks at.
const peekSize = 1 << 16

// An Input is one opened input file of check or replay: its kind and its
// (decompressed) content.
type Input struct {
	Name   string
	Kind   string
	Gzip   bool
	R      *bufio.Reader
	c      io.Closer // the file, or nil for standard input
	digest *digestReader
}

// A digestReader counts and hashes the bytes of an input as stored (before
// gzip is undone), for the reports' header: a report names the exact bytes
// it judged.
type digestReader struct {
	r   io.Reader
	h   hash.Hash
	n   uint64
	eof bool
}

func (d *digestReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.h.Write(p[:n])
	d.n += uint64(n)
	if err == io.EOF {
		d.eof = true
	}
	return n, err
}

// sum is the input's size and hex SHA-256; the digest is "" unless the
// whole input was read.
func (d *digestReader) sum() (uint64, string) {
	if d == nil {
		return 0, ""
	}
	if !d.eof {
		return d.n, ""
	}
	return d.n, hex.EncodeToString(d.h.Sum(nil))
}

// Close closes the file (not standard input). It may be called again.
func (in *Input) Close() {
	if in.c != nil {
		in.c.Close()
	}
}

// Sum is the size and hex SHA-256 of the input as stored (before gzip is
// undone), for the reports' header; the digest is "" unless the whole
// input was read. A nil Input has none.
func (in *Input) Sum() (uint64, string) {
	if in == nil {
		return 0, ""
	}
	return in.digest.sum()
}

// KindText is the kind as the summary shows it.
func (in *Input) KindText() string {
	if in.Gzip {
		return in.Kind + ", gzip"
	}
	return in.Kind
}

// OpenInput opens name ("-": stdin), reading gzip transparently, and
// recognises what it holds. watch (may be nil) wraps the bytes as stored,
// of total bytes (-1: unknown), e.g. with a progress bar.
func OpenInput(name string, stdin io.Reader, watch func(r io.Reader, total int64) io.Reader) (*Input, error) {
	in := &Input{Name: name}
	var r io.Reader = stdin
	total := int64(-1)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		r, in.c = f, f
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			total = st.Size()
		}
	}
	in.digest = &digestReader{r: r, h: sha256.New()}
	r = in.digest
	if watch != nil {
		r = watch(r, total)
	}
	br := bufio.NewReaderSize(r, peekSize)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			in.Close()
			return nil, fmt.Errorf("gzip: %v", err)
		}
		in.Gzip = true
		br = bufio.NewReaderSize(zr, peekSize)
	}
	// A document saved with a byte order mark (RFC 8259 lets a parser
	// ignore it) is recognised and read as without one: never as a stdio
	// stream whose first line starts with "\ufeff".
	tap.SkipBOM(br)
	in.R = br
	head, err := br.Peek(peekSize)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		in.Close()
		return nil, err
	}
	in.Kind = DetectKind(strings.TrimSuffix(name, ".gz"), head, err == io.EOF)
	return in, nil
}

// DetectKind says what an input holds from its first bytes (head; whole
// when complete). A capture starts with a header record; a violation log
// with a finding record; a registration is an object with "hooks" and no
// "jsonrpc"; several lines of JSON are a stream, and so is a file named
// .jsonl or .ndjson; one JSON value is a message.
func DetectKind(name string, head []byte, complete bool) string {
	if len(bytes.TrimSpace(head)) == 0 && complete {
		return KindEmpty
	}
	first := bytes.TrimSpace(head)
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = bytes.TrimSpace(first[:i])
	}
	// Binary data (an image, an executable, an archive) starts with bytes
	// that are not text. A stream whose later lines are not UTF-8, or hold
	// NUL bytes, is still traffic: BASE-1 reports those lines.
	if (bytes.IndexByte(first, 0) >= 0 || !utf8.Valid(trimPartialRune(first))) && first[0] != '{' && first[0] != '[' {
		return KindBinary
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(first, &probe) == nil {
		switch {
		case IsHeader(first):
			return KindCapture
		case probe["check"] != nil && probe["level"] != nil && probe["jsonrpc"] == nil:
			return KindLog
		}
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson":
		return KindStream
	}
	if complete {
		if v, _, err := tap.ParseJSON(bytes.TrimSpace(head)); err == nil {
			if v.Kind == tap.Object && v.Has("hooks") && !v.Has("jsonrpc") {
				return KindRegistration
			}
			return KindMessage
		}
	}
	switch {
	case probe != nil && bytes.Count(bytes.TrimSpace(head), []byte("\n")) > 0:
		return KindStream // several lines, the first a JSON object
	case len(first) > 0 && first[0] != '{' && first[0] != '[':
		return KindStream // text lines: stdio output, non-protocol lines included
	case !complete && bytes.IndexByte(head, '\n') < 0:
		return KindStream // a first line longer than the peek: a stream's
	}
	return KindMessage
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b (the
// peek may cut one).
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= 3 && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
