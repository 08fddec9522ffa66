// Package capture reads and writes ahp-tap capture files: JSON Lines with a
// header record, one record per frame and one per transport note. The format
// is documented in docs/capture-format.md.
package capture

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ahp-tap/ahp-tap/internal/safefile"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Format and Version identify the capture format in header records.
const (
	Format  = "ahp-tap-capture"
	Version = 1
)

// A Header opens a capture (and every segment appended by another process).
type Header struct {
	Type      string        `json:"type"` // "header"
	Format    string        `json:"format"`
	Version   int           `json:"version"`
	Tool      string        `json:"tool"`
	Snapshot  string        `json:"snapshot"`
	Transport tap.Transport `json:"transport"`
	Started   time.Time     `json:"started"`
	// Conn is the connection or process the segment belongs to, when the
	// whole segment is one.
	Conn string `json:"conn,omitempty"`
	// Registration and Hook describe the configuration of the live run
	// (a path and a hook id), for a reader; replay does not need them.
	Registration string `json:"registration,omitempty"`
	Hook         string `json:"hook,omitempty"`
	// Lifecycle is the stdio lifecycle of the live run, when known.
	Lifecycle string `json:"lifecycle,omitempty"`
	// TimeoutMs is the --timeout of the live run, when given.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// RegistrationDoc is the registration document of the live run, so
	// that a replay judges dispatch and deadlines as the live run did.
	RegistrationDoc json.RawMessage `json:"registrationDoc,omitempty"`
	// EndRecord says the writer of this segment closes it with an end
	// note (kind "end"); a segment that promises one and lacks it was cut
	// off: its writer was killed (TAP-1 on replay). Captures written
	// before end records existed do not promise one.
	EndRecord bool `json:"endRecord,omitempty"`
	// State is the --state directory (an absolute path) through which
	// the live run shared what it saw of each event with other ahp-tap
	// processes. Segments with the same State share one event store on
	// replay, as their processes shared the directory; a segment without
	// one had an event store of its own, and has one on replay.
	State string `json:"state,omitempty"`
	// Injected, when set, says that the live run injected faults on
	// purpose (--inject, issue 25): "faults injected: traffic was altered
	// on purpose", the specs and the seed. Its injected and swallowed
	// notes say where.
	Injected string `json:"injected,omitempty"`
}

// A Record is one line of a capture after the header: a frame or a note.
type Record struct {
	Type      string        `json:"type"` // "frame" or "note"
	Time      time.Time     `json:"time"`
	Seq       uint64        `json:"seq,omitempty"`
	Dir       tap.Direction `json:"direction,omitempty"`
	Transport tap.Transport `json:"transport,omitempty"`
	Conn      string        `json:"conn,omitempty"`
	// Raw holds the frame's exact bytes when they are valid UTF-8; Raw64
	// holds them base64-encoded otherwise. Exactly one is set on a frame.
	Raw       *string       `json:"raw,omitempty"`
	Raw64     string        `json:"raw64,omitempty"`
	Size      int           `json:"size,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
	Framing   *tap.Framing  `json:"framing,omitempty"`
	HTTP      *tap.HTTPMeta `json:"http,omitempty"`
	Note      *tap.Note     `json:"note,omitempty"`
}

// FrameRecord renders f as a record.
func FrameRecord(f *tap.Frame) Record {
	r := Record{Type: "frame", Time: f.Time, Seq: f.Seq, Dir: f.Dir, Transport: f.Transport, Conn: f.Conn,
		Truncated: f.Truncated, HTTP: f.HTTP}
	if utf8.Valid(f.Raw) {
		s := string(f.Raw)
		r.Raw = &s
	} else {
		r.Raw64 = base64.StdEncoding.EncodeToString(f.Raw)
	}
	if f.Size != len(f.Raw) {
		r.Size = f.Size
	}
	if f.Framing != (tap.Framing{}) {
		fr := f.Framing
		r.Framing = &fr
	}
	return r
}

// Frame turns a frame record back into a frame.
func (r Record) Frame() (*tap.Frame, error) {
	f := &tap.Frame{Seq: r.Seq, Dir: r.Dir, Time: r.Time, Transport: r.Transport, Conn: r.Conn,
		Truncated: r.Truncated, HTTP: r.HTTP, Size: r.Size}
	switch {
	case r.Raw != nil:
		f.Raw = []byte(*r.Raw)
	default:
		b, err := base64.StdEncoding.DecodeString(r.Raw64)
		if err != nil {
			return nil, fmt.Errorf("frame record raw64: %w", err)
		}
		f.Raw = b
	}
	if r.Framing != nil {
		f.Framing = *r.Framing
	}
	if f.Size == 0 {
		f.Size = len(f.Raw)
	}
	return f, nil
}

// A Writer appends records to a capture file. Every record is written with
// one write(2) on a file opened with O_APPEND, so concurrent processes
// (per-event backends) appending to one capture never interleave inside a
// record. A Writer is safe for concurrent use. Write errors are remembered,
// not returned to the caller on the audit path: see Err.
type Writer struct {
	mu   sync.Mutex // guards f, err and buf
	f    *os.File
	buf  bytes.Buffer
	err  error  // first write error
	conn string // the segment's conn, for its end record

	notice string // set by Create, then read-only
}

// Create opens (creating with mode 0600, or appending to) a capture file and
// writes h as a segment header. It never blocks and never follows a link:
// a symbolic link or anything but a regular file is refused (a FIFO
// without a reader would block the open). An existing file others may read
// or write is made 0600; Notice then says so in one line.
func Create(path string, h Header) (*Writer, error) {
	f, notice, err := safefile.OpenAppend(path)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, conn: h.Conn, notice: notice}
	h.Type, h.Format, h.Version, h.EndRecord = "header", Format, Version, true
	if h.Started.IsZero() {
		h.Started = time.Now().UTC()
	}
	if err := w.write(h); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Notice is the one-line notice Create left for the user ("" for none): an
// existing capture others could read was made 0600.
func (w *Writer) Notice() string { return w.notice }

// Record implements tap.Recorder.
func (w *Writer) Record(f *tap.Frame) { _ = w.write(FrameRecord(f)) }

// RecordNote implements tap.Recorder.
func (w *Writer) RecordNote(n tap.Note) {
	_ = w.write(Record{Type: "note", Time: n.Time, Conn: n.Conn, Note: &n})
}

func (w *Writer) write(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.f == nil {
		return os.ErrClosed
	}
	w.buf.Reset()
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.err = err
		return err
	}
	if _, err := w.f.Write(w.buf.Bytes()); err != nil {
		w.err = err
		return err
	}
	return nil
}

// Err returns the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close writes the segment's end record (a note of kind "end": the
// writer was not killed) and closes the file. It is idempotent.
func (w *Writer) Close() error {
	now := time.Now().UTC()
	_ = w.write(Record{Type: "note", Time: now, Conn: w.conn, Note: &tap.Note{Kind: tap.NoteEnd, Time: now, Conn: w.conn}})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.err
	}
	err := w.f.Close()
	w.f = nil
	if w.err == nil {
		w.err = err
	}
	return err
}

// An Item is what a capture reader yields: a header, a frame or a note.
type Item struct {
	Line   int
	Header *Header
	Frame  *tap.Frame
	Note   *tap.Note
}

// ErrNotCapture is returned when the first record is not a capture header.
var ErrNotCapture = errors.New("not an ahp-tap capture: the first line is not a header record")

// Read reads a whole capture. Lines may be any length.
func Read(r io.Reader) ([]Item, error) {
	cr := NewReader(r)
	var out []Item
	for {
		it, err := cr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			if errors.Is(err, ErrNotCapture) {
				return nil, err
			}
			return out, err
		}
		out = append(out, it)
	}
}

// MaxLine caps one line of a capture a Reader accepts. ahp-tap writes frames
// of at most 16 MiB (the live taps' audit cap); even JSON-escaped they fit.
// A longer line (a hostile or corrupt file) is an error, never a reason to
// hold unbounded memory (issue 8 item 9).
const MaxLine = 128 << 20

// A Reader reads a capture one record at a time, so that a replay holds
// one record in memory rather than the whole file.
type Reader struct {
	// Damaged, when set, is told of each line that cannot be read, and
	// Next goes on with the next line instead of returning the error.
	Damaged func(*LineError)

	br      *bufio.Reader
	line    int  // number of the last line read
	started bool // the header has been read
	pos     int64
	start   int64 // offset of the line Next read last
}

// Offset is the byte offset in the input of the line Next read last: the
// record it returned can be read again from there (ReadRecordAt).
func (r *Reader) Offset() int64 { return r.start }

// ReadRecordAt reads the record of the line starting at byte off of ra
// (an offset Reader.Offset gave), line being its line number.
func ReadRecordAt(ra io.ReaderAt, off int64, line int) (Item, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(ra, off, MaxLine+1), 1<<16)
	rd := &Reader{br: br, line: line - 1, started: true}
	b, err := rd.readLine()
	if len(b) == 0 && err != nil {
		return Item{}, err
	}
	if off == 0 {
		b = tap.TrimBOM(b)
	}
	return parseLine(b, line)
}

// Line is the number of the capture line Next read last (1-based): the
// line of the record it returned.
func (r *Reader) Line() int { return r.line }

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReaderSize(r, 1<<16)} }

// Next returns the next record. It returns io.EOF after the last one, and
// ErrNotCapture when the first record is not a header (plain NDJSON, say:
// the caller may read it another way).
func (r *Reader) Next() (Item, error) {
	for {
		r.start = r.pos
		b, err := r.readLine()
		r.pos += int64(len(b))
		if r.line == 0 {
			b = tap.TrimBOM(b) // a capture saved by an editor that adds one
		}
		if len(b) > 0 {
			r.line++
		}
		if len(bytes.TrimSpace(b)) > 0 {
			if !r.started && !IsHeader(b) {
				return Item{}, ErrNotCapture
			}
			r.started = true
			it, perr := parseLine(b, r.line)
			if perr == nil {
				return it, nil
			}
			le := &LineError{Line: r.line, Err: perr}
			if r.Damaged == nil {
				return it, le
			}
			r.Damaged(le) // skip the damaged line and read on
			if err != nil {
				return Item{}, err // io.EOF after a damaged last line
			}
			continue
		}
		if err != nil {
			return Item{}, err // io.EOF at the end
		}
	}
}

// readLine is bufio's ReadBytes('\n') with the MaxLine cap.
func (r *Reader) readLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := r.br.ReadSlice('\n')
		if len(line)+len(frag) > MaxLine {
			return nil, fmt.Errorf("capture line %d is longer than %d MiB: not an ahp-tap capture record", r.line+1, MaxLine>>20)
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// A LineError is a record that could not be read: a damaged line. The
// Reader can go on with the next line.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return e.Err.Error() }
func (e *LineError) Unwrap() error { return e.Err }

// IsHeader reports whether a line is a capture header record: a JSON
// object with "type":"header". A file whose first line is not one is not a
// capture.
func IsHeader(b []byte) bool {
	var probe struct{ Type string }
	return json.Unmarshal(b, &probe) == nil && probe.Type == "header"
}

func parseLine(b []byte, line int) (Item, error) {
	var probe struct{ Type string }
	if err := json.Unmarshal(b, &probe); err != nil {
		return Item{}, fmt.Errorf("capture line %d: %w", line, err)
	}
	switch probe.Type {
	case "header":
		var h Header
		if err := json.Unmarshal(b, &h); err != nil {
			return Item{}, fmt.Errorf("capture line %d: %w", line, err)
		}
		if h.Format != Format {
			return Item{}, fmt.Errorf("capture line %d: format %q is not %q", line, h.Format, Format)
		}
		if h.Version > Version {
			return Item{}, fmt.Errorf("capture line %d: format version %d is newer than this ahp-tap reads (%d)", line, h.Version, Version)
		}
		return Item{Line: line, Header: &h}, nil
	case "frame":
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return Item{}, fmt.Errorf("capture line %d: %w", line, err)
		}
		f, err := r.Frame()
		if err != nil {
			return Item{}, fmt.Errorf("capture line %d: %w", line, err)
		}
		return Item{Line: line, Frame: f}, nil
	case "note":
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return Item{}, fmt.Errorf("capture line %d: %w", line, err)
		}
		if r.Note == nil {
			return Item{}, fmt.Errorf("capture line %d: note record without note", line)
		}
		return Item{Line: line, Note: r.Note}, nil
	}
	return Item{}, fmt.Errorf("capture line %d: unknown record type %q", line, probe.Type)
}
