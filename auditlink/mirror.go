package auditlink

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A Mirror (a stdio.Mirror) writes the audit copies of a link into a pipe
// whose other end an audit process reads, or into the shared audit
// process's socket. Its write end is non-blocking: each record is
// written with one write(2) on the forwarding path, before its bytes are
// forwarded, so a SIGKILL of the forwarding process loses no copy of
// anything it forwarded that the pipe took. When the pipe is full, records
// wait in a bounded backlog (MaxBacklog bytes, flushed in order by a
// goroutine of their own, and lost if the process is killed before); when
// the backlog is full too, a record is dropped and counted, and the next
// record of that direction carries the loss. Forwarding never waits.
type Mirror struct {
	mu      sync.Mutex // guards everything below; held only for non-blocking writes
	fd      int        // write end; -1 once closed
	buf     []byte     // scratch for one record
	backlog []byte     // records (the first maybe in part) the pipe had no room for
	seq     uint64
	loss    [3]bool   // by Direction: a record was dropped since the last written
	lines   [3]uint64 // by Direction: lines in the dropped records
	dead    bool      // the reader has gone (EPIPE): drop everything
	kick    chan struct{}
	flusher bool   // the backlog's goroutine runs
	max     int    // bound of the backlog in bytes
	store   []byte // the backlog's array (cap max), allocated on first use
	sent    int    // bytes of store before backlog (written already)
	sock    bool   // fd is a stream socket: closing shuts its write side down first
	// recs are the records in the backlog, in order, by the bytes of each
	// still to write; partial marks one already written in part (its
	// rest must follow). End uses them to cut the chunks that cannot be
	// handed over in time (cutChunksLocked).
	recs []backlogRec

	dropped atomic.Uint64 // records dropped
}

// A backlogRec is one record waiting in the backlog.
type backlogRec struct {
	n       int  // bytes of it still in the backlog
	partial bool // already written in part
}

// MaxBacklog is the default bound of the records waiting in the
// forwarding process for room in the pipe.
const MaxBacklog = 8 << 20

// NewPipeMirror makes the pipe, with a backlog of at most maxBacklog bytes
// (0: MaxBacklog; a bound below MaxBacklog also keeps the kernel's default
// pipe size). r is the read end, for the audit process (close it in this
// process once the audit process has it).
func NewPipeMirror(maxBacklog int) (m *Mirror, r *os.File, err error) {
	if maxBacklog <= 0 {
		maxBacklog = MaxBacklog
	}
	rfd, wfd, err := auditPipe(maxBacklog >= MaxBacklog)
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.SetNonblock(wfd, true); err != nil {
		syscall.Close(rfd)
		syscall.Close(wfd)
		return nil, nil, err
	}
	return &Mirror{fd: wfd, kick: make(chan struct{}, 1), max: maxBacklog}, os.NewFile(uintptr(rfd), "audit-link"), nil
}

// NewSocketMirror writes the audit copies of a link into fd, a connected
// stream socket (the shared audit process's, docs/stdio.md), exactly as
// NewPipeMirror's mirror writes them into its pipe. It takes fd and puts
// it in non-blocking mode; End and Close shut its write side down before
// closing it, so that the reader sees the end of the link even while a
// duplicate of fd is kept open to read the reader's answers.
func NewSocketMirror(fd, maxBacklog int) (*Mirror, error) {
	if maxBacklog <= 0 {
		maxBacklog = MaxBacklog
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	// Room for a burst while the audit catches up, as the pipe's 1 MiB
	// (the kernel caps it at its wmem_max).
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 1<<20)
	return &Mirror{fd: fd, kick: make(chan struct{}, 1), max: maxBacklog, sock: true}, nil
}

// Chunk implements Mirror: one non-blocking write, a place in the
// backlog, or a drop.
func (m *Mirror) Chunk(dir tap.Direction, t time.Time, p []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.write(RecordChunk, dir, t, p) {
		m.loss[dir] = true
		m.lines[dir] += uint64(bytes.Count(p, []byte{'\n'}))
	}
}

// Note implements Mirror.
func (m *Mirror) Note(n tap.Note) {
	b, _ := json.Marshal(n)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.write(RecordNote, n.Dir, n.Time, b)
}

// End writes the end record (the forwarding process ended cleanly, with
// res), waits at most wait for the backlog to reach the pipe, and closes
// the pipe. It returns the bytes of records (the end record among them)
// the pipe did not take in time: 0 when the link was handed over whole.
func (m *Mirror) End(res stdio.Result, wait time.Duration) (left int) {
	b, _ := json.Marshal(res)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.write(RecordEnd, 0, time.Now(), b)
	start := time.Now()
	deadline, cutAt := start.Add(wait), start.Add(wait/2)
	cut := false
	for m.flushLocked() && len(m.backlog) > 0 && time.Now().Before(deadline) {
		if !cut && time.Now().After(cutAt) {
			// Half the time is gone: the audit copies still waiting will
			// not all be handed over. Cut them (counted as not audited,
			// TAP-1) so that the notes and the end record are: a clean
			// end is never taken for a kill (issue 28 item 3).
			m.cutChunksLocked()
			cut = true
			continue
		}
		m.mu.Unlock()
		time.Sleep(time.Millisecond)
		m.mu.Lock()
	}
	left = len(m.backlog)
	m.closeLocked()
	return left
}

// Close closes the pipe without an end record (the audit process then
// records the link as killed). It is idempotent.
func (m *Mirror) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closeLocked()
}

func (m *Mirror) closeLocked() {
	if m.fd >= 0 {
		if m.sock {
			_ = syscall.Shutdown(m.fd, syscall.SHUT_WR)
		}
		syscall.Close(m.fd)
		m.fd = -1
	}
	m.backlog, m.store, m.recs = nil, nil, nil
	if m.flusher {
		close(m.kick)
		m.flusher = false
	}
}

// Dropped returns how many records were dropped.
func (m *Mirror) Dropped() uint64 { return m.dropped.Load() }

// write writes one record without waiting, or queues it behind the
// backlog. It reports false (and counts) when the record was dropped.
func (m *Mirror) write(kind byte, dir tap.Direction, t time.Time, p []byte) bool {
	if m.fd < 0 || m.dead || len(p) > MaxRecord {
		m.dropped.Add(1)
		return false
	}
	n := recordHeader + len(p)
	// Only a chunk is ever dropped for want of room: notes and the end
	// record are few and small, and the audit process needs them.
	if !m.flushLocked() || (kind == RecordChunk && len(m.backlog) > 0 && len(m.backlog)+n > m.max) {
		m.dropped.Add(1)
		return false
	}
	m.seq++
	if cap(m.buf) < n {
		m.buf = make([]byte, n, max(n, 2*cap(m.buf)))
	}
	b := m.buf[:n]
	b[0], b[1], b[2], b[3] = kind, byte(dir), 0, 0
	// A stream record carries the losses of both directions (flagLoss,
	// flagLossOther): the answer to a dropped request must not reach the
	// audit before the news of the drop.
	var lost, lostHere, lostOther uint64
	var hadLoss, hadOther bool
	stream := dir == tap.FromHarness || dir == tap.FromBackend
	other := otherStream(dir)
	if stream {
		hadLoss, hadOther = m.loss[dir], m.loss[other]
		if hadLoss {
			b[2] |= flagLoss
		}
		if hadOther {
			b[2] |= flagLossOther
		}
		lostHere, lostOther = m.lines[dir], m.lines[other]
		lost = lostHere + lostOther
		m.loss[dir], m.lines[dir] = false, 0
		m.loss[other], m.lines[other] = false, 0
	}
	drop := func() bool { // never written: the numbers and the loss stay as they were
		m.seq--
		if stream {
			m.loss[dir], m.lines[dir] = hadLoss, lostHere
			m.loss[other], m.lines[other] = hadOther, lostOther
		}
		m.dropped.Add(1)
		return false
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(len(p)))
	binary.LittleEndian.PutUint64(b[8:], uint64(t.UnixNano()))
	binary.LittleEndian.PutUint64(b[16:], m.seq)
	binary.LittleEndian.PutUint64(b[24:], lost)
	copy(b[recordHeader:], p)
	if len(m.backlog) > 0 {
		m.queueRec(b, false) // in order, behind what waits
		return true
	}
	written := false
	for {
		w, err := syscall.Write(m.fd, b)
		switch {
		case w == len(b):
			return true
		case w > 0:
			b, written = b[w:], true // the rest must follow before anything else
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
		default:
			if errors.Is(err, syscall.EPIPE) {
				m.dead = true
			}
			return drop()
		}
		if !written && kind == RecordChunk && len(b) > m.max {
			return drop() // too big to wait
		}
		m.queueRec(b, written)
		m.startFlusher()
		return true
	}
}

// flushLocked writes as much of the backlog as the pipe takes now. It
// reports false when the reader has gone.
func (m *Mirror) flushLocked() bool {
	for len(m.backlog) > 0 {
		w, err := syscall.Write(m.fd, m.backlog)
		switch {
		case w > 0:
			m.backlog = m.backlog[w:]
			m.sent += w
			m.consumed(w)
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.EAGAIN):
			return true
		default:
			m.dead = errors.Is(err, syscall.EPIPE) || m.dead
			m.backlog, m.sent, m.recs = m.store[:0], 0, m.recs[:0]
			return false
		}
	}
	if m.store != nil {
		m.backlog, m.sent = m.store[:0], 0 // reuse the array
	}
	return true
}

// queue appends b to the backlog, reusing the backlog's array: the part
// already written is dropped from its front when that makes room.
func (m *Mirror) queue(b []byte) {
	if m.store == nil {
		// Room for the bound, and for what exceeds it: the rest of a
		// record already written in part, notes, the end record.
		m.store = make([]byte, 0, m.max+2*(recordHeader+MaxRecord))
		m.backlog, m.sent = m.store[:0], 0
	}
	if len(m.backlog)+len(b) > cap(m.store)-m.sent {
		n := copy(m.store[:cap(m.store)], m.backlog)
		m.backlog, m.sent = m.store[:n], 0
	}
	m.backlog = append(m.backlog, b...)
}

// queueRec queues one record (the rest of one, when partial: its start
// was written already).
func (m *Mirror) queueRec(b []byte, partial bool) {
	m.queue(b)
	m.recs = append(m.recs, backlogRec{n: len(b), partial: partial})
}

// consumed accounts for w bytes of the backlog written.
func (m *Mirror) consumed(w int) {
	for w > 0 && len(m.recs) > 0 {
		if w < m.recs[0].n {
			m.recs[0].n -= w
			m.recs[0].partial = true
			return
		}
		w -= m.recs[0].n
		m.recs = m.recs[1:]
	}
}

// cutChunksLocked drops the chunk records waiting in the backlog, except
// one already written in part, and counts their lines as lost: a record
// of no bytes per direction carries the loss (flagLoss and its lines)
// ahead of the notes and the end record, which are kept.
func (m *Mirror) cutChunksLocked() {
	var kept []byte
	var recs []backlogRec
	var loss [3]bool
	var lines [3]uint64
	var tail []byte // the kept notes and end record
	var tailRecs []backlogRec
	off := 0
	for _, r := range m.recs {
		rec := m.backlog[off : off+r.n]
		off += r.n
		if r.partial {
			kept = append(kept, rec...)
			recs = append(recs, r)
			continue
		}
		if len(rec) >= recordHeader && rec[0] == RecordChunk {
			d := tap.Direction(rec[1]) % 3
			loss[d] = true
			lines[d] += binary.LittleEndian.Uint64(rec[24:]) + uint64(bytes.Count(rec[recordHeader:], []byte{'\n'}))
			m.dropped.Add(1)
			continue
		}
		tail = append(tail, rec...)
		tailRecs = append(tailRecs, r)
	}
	for d := range loss {
		loss[d] = loss[d] || m.loss[d]
		lines[d] += m.lines[d]
		m.loss[d], m.lines[d] = false, 0
		if !loss[d] || d == 0 {
			continue
		}
		var h [recordHeader]byte
		m.seq++
		h[0], h[1], h[2] = RecordChunk, byte(d), flagLoss
		binary.LittleEndian.PutUint64(h[8:], uint64(time.Now().UnixNano()))
		binary.LittleEndian.PutUint64(h[16:], m.seq)
		binary.LittleEndian.PutUint64(h[24:], lines[d])
		kept = append(kept, h[:]...)
		recs = append(recs, backlogRec{n: recordHeader})
	}
	kept = append(kept, tail...)
	recs = append(recs, tailRecs...)
	m.store = kept
	m.backlog, m.sent, m.recs = kept, 0, recs
}

// startFlusher starts (once) the goroutine that empties the backlog as the
// pipe makes room, and wakes it.
func (m *Mirror) startFlusher() {
	if !m.flusher {
		m.flusher = true
		kick := m.kick
		go func() {
			for range kick {
				for {
					m.mu.Lock()
					ok := m.fd >= 0 && m.flushLocked()
					left := len(m.backlog)
					m.mu.Unlock()
					if !ok || left == 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
}
