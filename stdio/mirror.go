package stdio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A Mirror takes the audit copies of a link out of the forwarding process
// (to an audit process, see docs/stdio.md). Chunk runs on the forwarding
// path, before the bytes are forwarded, and must never block; Note runs
// off it (or after forwarding in that direction is over) and may wait a
// bounded time.
type Mirror interface {
	Chunk(dir tap.Direction, t time.Time, p []byte)
	Note(n tap.Note)
}

// mirror hands n to the configured Mirror, if any, and reports whether
// there was one.
func (t *Tap) mirror(n tap.Note) bool {
	if t.cfg.Mirror == nil {
		return false
	}
	t.cfg.Mirror.Note(n)
	return true
}

// AuditThread lowers the calling goroutine's thread to the audit
// priority p, for good (an audit process's feeding loop).
func AuditThread(p Priority) { backgroundThread(p) }

// Kinds of audit-link record.
const (
	RecordChunk = 1 // bytes read from Dir's stream
	RecordNote  = 2 // a tap.Note, JSON
	RecordEnd   = 3 // the forwarding process ended cleanly; JSON Result
)

// recordHeader is the fixed header of every audit-link record, little
// endian: kind, dir, flags, reserved, payload length (uint32), read time
// (Unix ns), sequence number, lines lost in dir just before this record.
const recordHeader = 32

// flagLoss says audit copies of the record's direction were dropped just
// before it: the audit process resynchronises that stream at the next
// newline.
const flagLoss = 1

// MaxRecord caps one record's payload; a chunk is one read (readSize).
const MaxRecord = 1 << 20

// A Record is one audit-link record as the audit process reads it.
type Record struct {
	Kind    byte
	Dir     tap.Direction
	Loss    bool   // audit copies of Dir were dropped just before
	Lost    uint64 // lines in them
	Time    time.Time
	Seq     uint64
	Payload []byte
}

// PipeMirror writes the audit copies of a link into a pipe whose other end
// an audit process reads. Its write end is non-blocking: a record the pipe
// has no room for is dropped and counted (the next record of that
// direction carries the loss), so the forwarding loops never wait for the
// audit process. A record written only in part is finished before any
// other (the stream stays whole), or dropped with everything after it if
// the pipe stays full. Each record reaches the kernel's pipe buffer before
// its bytes are forwarded, so a SIGKILL of the forwarding process loses no
// copy of anything it forwarded.
type PipeMirror struct {
	mu    sync.Mutex // guards everything below; held only for non-blocking writes
	fd    int        // write end; -1 once closed
	buf   []byte     // scratch for one record
	debt  []byte     // the unwritten rest of a record written in part
	seq   uint64
	loss  [3]bool   // by Direction: a record was dropped since the last written
	lines [3]uint64 // by Direction: lines in the dropped records
	dead  bool      // the reader has gone (EPIPE): drop everything

	dropped atomic.Uint64 // records dropped
}

// NewPipeMirror makes the pipe. r is the read end, for the audit process
// (close it in this process once the audit process has it).
func NewPipeMirror() (m *PipeMirror, r *os.File, err error) {
	rfd, wfd, err := auditPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.SetNonblock(wfd, true); err != nil {
		syscall.Close(rfd)
		syscall.Close(wfd)
		return nil, nil, err
	}
	return &PipeMirror{fd: wfd}, os.NewFile(uintptr(rfd), "audit-link"), nil
}

// Chunk implements Mirror: one non-blocking write, or a drop.
func (m *PipeMirror) Chunk(dir tap.Direction, t time.Time, p []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.write(RecordChunk, dir, t, p, 0) {
		m.loss[dir] = true
		m.lines[dir] += uint64(bytes.Count(p, []byte{'\n'}))
	}
}

// noteWait bounds how long a note waits for room in the pipe.
const noteWait = 200 * time.Millisecond

// Note implements Mirror. A note is rare and matters (an EOF, an exit):
// it waits up to noteWait for room.
func (m *PipeMirror) Note(n tap.Note) {
	b, _ := json.Marshal(n)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.write(RecordNote, n.Dir, n.Time, b, noteWait)
}

// End writes the end record (the forwarding process ended cleanly, with
// res) and closes the pipe, waiting at most wait for room.
func (m *PipeMirror) End(res Result, wait time.Duration) {
	b, _ := json.Marshal(res)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.write(RecordEnd, 0, time.Now(), b, wait)
	m.closeLocked()
}

// Close closes the pipe without an end record (the audit process then
// records the link as killed). It is idempotent.
func (m *PipeMirror) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closeLocked()
}

func (m *PipeMirror) closeLocked() {
	if m.fd >= 0 {
		syscall.Close(m.fd)
		m.fd = -1
	}
}

// Dropped returns how many records were dropped.
func (m *PipeMirror) Dropped() uint64 { return m.dropped.Load() }

// write writes one record, waiting at most wait for room. It reports
// false (and counts) when the record was dropped.
func (m *PipeMirror) write(kind byte, dir tap.Direction, t time.Time, p []byte, wait time.Duration) bool {
	if m.fd < 0 || m.dead || len(p) > MaxRecord {
		m.dropped.Add(1)
		return false
	}
	deadline := time.Now().Add(wait)
	if !m.flush(deadline) {
		m.dropped.Add(1)
		return false
	}
	m.seq++
	n := recordHeader + len(p)
	if cap(m.buf) < n {
		m.buf = make([]byte, n, max(n, 2*cap(m.buf)))
	}
	b := m.buf[:n]
	b[0], b[1], b[2], b[3] = kind, byte(dir), 0, 0
	var lost uint64
	if dir == tap.FromHarness || dir == tap.FromBackend {
		if m.loss[dir] {
			b[2] = flagLoss
		}
		lost = m.lines[dir]
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(len(p)))
	binary.LittleEndian.PutUint64(b[8:], uint64(t.UnixNano()))
	binary.LittleEndian.PutUint64(b[16:], m.seq)
	binary.LittleEndian.PutUint64(b[24:], lost)
	copy(b[recordHeader:], p)
	for {
		w, err := syscall.Write(m.fd, b)
		if w > 0 {
			// Written, whole or in part: the record is on its way, and
			// what is left must follow before anything else.
			if w < len(b) {
				m.debt = append(m.debt[:0], b[w:]...)
			}
			if dir == tap.FromHarness || dir == tap.FromBackend {
				m.loss[dir], m.lines[dir] = false, 0
			}
			return true
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EAGAIN) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			continue
		}
		if errors.Is(err, syscall.EPIPE) {
			m.dead = true
		}
		m.seq-- // never written: the numbers stay consecutive
		m.dropped.Add(1)
		return false
	}
}

// flush writes what is left of a record written in part, waiting until
// deadline for room. It reports whether nothing is left.
func (m *PipeMirror) flush(deadline time.Time) bool {
	for len(m.debt) > 0 {
		w, err := syscall.Write(m.fd, m.debt)
		switch {
		case w > 0:
			m.debt = m.debt[w:]
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.EAGAIN) && time.Now().Before(deadline):
			time.Sleep(time.Millisecond)
		default:
			if errors.Is(err, syscall.EPIPE) {
				m.dead = true
			}
			return false
		}
	}
	return true
}

// A RecordReader reads audit-link records.
type RecordReader struct {
	br  *bufio.Reader
	hdr [recordHeader]byte
}

// NewRecordReader returns a reader of the audit link r.
func NewRecordReader(r io.Reader) *RecordReader {
	return &RecordReader{br: bufio.NewReaderSize(r, 1<<16)}
}

// Next returns the next record. It returns io.EOF at a clean end of the
// stream and io.ErrUnexpectedEOF when the last record is incomplete (the
// writer was killed in the middle of it).
func (rr *RecordReader) Next() (Record, error) {
	if _, err := io.ReadFull(rr.br, rr.hdr[:]); err != nil {
		return Record{}, err
	}
	h := rr.hdr[:]
	n := binary.LittleEndian.Uint32(h[4:])
	if n > MaxRecord {
		return Record{}, fmt.Errorf("audit link: record of %d bytes exceeds %d", n, MaxRecord)
	}
	r := Record{Kind: h[0], Dir: tap.Direction(h[1]), Loss: h[2]&flagLoss != 0,
		Time: time.Unix(0, int64(binary.LittleEndian.Uint64(h[8:]))), Seq: binary.LittleEndian.Uint64(h[16:]),
		Lost: binary.LittleEndian.Uint64(h[24:]), Payload: make([]byte, n)}
	if _, err := io.ReadFull(rr.br, r.Payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Record{}, err
	}
	return r, nil
}
