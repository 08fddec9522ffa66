package auditlink

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

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

// flagLossOther says audit copies of the other stream direction were
// dropped before the record (its lines are in the record's lost count
// too). The loss travels on the next record of either direction: carried
// only on the next record of its own, a dropped request's answer could be
// judged first, as an answer to a request never sent (a CORR-2 the tap's
// own drop caused).
const flagLossOther = 2

// MaxRecord caps one record's payload; a chunk is one read (readSize).
const MaxRecord = 1 << 20

// A Record is one audit-link record as the audit process reads it.
type Record struct {
	Kind      byte
	Dir       tap.Direction
	Loss      bool   // audit copies of Dir were dropped just before
	LossOther bool   // audit copies of the other stream direction were dropped before
	Lost      uint64 // lines in them (both directions)
	Time      time.Time
	Seq       uint64
	Payload   []byte
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
	r, n, err := rr.header()
	if err != nil {
		return Record{}, err
	}
	r.Payload = make([]byte, n)
	if _, err := io.ReadFull(rr.br, r.Payload); err != nil {
		return Record{}, unexpected(err)
	}
	return r, nil
}

// header reads the next record's header: the record without its payload,
// and the payload's length (read it, or skip it, next).
func (rr *RecordReader) header() (Record, int, error) {
	if _, err := io.ReadFull(rr.br, rr.hdr[:]); err != nil {
		return Record{}, 0, err
	}
	h := rr.hdr[:]
	n := binary.LittleEndian.Uint32(h[4:])
	if n > MaxRecord {
		return Record{}, 0, fmt.Errorf("audit link: record of %d bytes exceeds %d", n, MaxRecord)
	}
	r := Record{Kind: h[0], Dir: tap.Direction(h[1]), Loss: h[2]&flagLoss != 0, LossOther: h[2]&flagLossOther != 0,
		Time: time.Unix(0, int64(binary.LittleEndian.Uint64(h[8:]))), Seq: binary.LittleEndian.Uint64(h[16:]),
		Lost: binary.LittleEndian.Uint64(h[24:])}
	return r, int(n), nil
}

// skip passes over an n-byte payload without copying it, and counts its
// lines: what a Reader does with a chunk it drops.
func (rr *RecordReader) skip(n int) (lines uint64, err error) {
	for n > 0 {
		b, err := rr.br.Peek(min(n, rr.br.Size()))
		lines += uint64(bytes.Count(b, []byte{'\n'}))
		rr.br.Discard(len(b))
		n -= len(b)
		if err != nil && n > 0 {
			return lines, unexpected(err)
		}
	}
	return lines, nil
}

// unexpected makes the end of the stream inside a record what it is.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// otherStream is the stream direction opposite dir (harness ↔ backend).
func otherStream(dir tap.Direction) tap.Direction {
	if dir == tap.FromHarness {
		return tap.FromBackend
	}
	return tap.FromHarness
}
