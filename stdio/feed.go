package stdio

import (
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// newAuditor puts the configured session behind an auditor
// whose goroutine runs at the audit priority and releases each frame's
// bytes from the audit budget when it takes the frame. It returns nil for
// pure forwarding.
func (t *Tap) newAuditor() *tap.Auditor {
	s := t.cfg.Session
	if s == nil {
		return nil
	}
	return s.Audit(tap.AuditorConfig{
		Queue:    t.cfg.Queue,
		Budget:   t.cfg.AuditBytes,
		Complete: t.cfg.Complete,
		Begin:    func() { backgroundThread(t.cfg.AuditPriority) },
		Clock:    t.clock,
	})
}

// clock is the auditor's Clock: now while every chunk and note timed so
// far is in the auditor's queue, the zero time (nothing vouched for)
// while the feeder still holds one. With it the session hears the time
// while the link is quiet, as an audit process's does (auditlink.Feed):
// CORR-3 as a deadline passes, and a live conduct client's clock.
func (t *Tap) clock(now time.Time) time.Time {
	if t.inFlight.Load() != 0 {
		return time.Time{}
	}
	return now
}

// feed is the one goroutine between the forwarding loops and the auditor:
// it cuts each direction's audit copy into lines with a tap.Framer
// (AHP-STDIO-001 framing) and submits them as frames, with the transport
// notes in between, in the order the chunks were read. It never touches
// the forwarded bytes. Lines lost with dropped chunks, and lines the
// framer discards to resynchronise after a loss, are counted as dropped
// as soon as they are known, so the session records the loss before the
// frames that follow it.
func (t *Tap) feed() {
	defer close(t.fed)
	a := t.aud
	if a == nil {
		for range t.chunks {
			t.inFlight.Add(-1)
		}
		return
	}
	backgroundThread(t.cfg.AuditPriority)
	conn := t.cfg.Conn
	fr := tap.NewFramer(t.cfg.MaxAuditLine, t.submit, a.Drop)
	for c := range t.chunks {
		t.countLostLines()
		if c.lost && c.dir != 0 {
			fr.Lost(conn, c.dir)
		}
		if c.note != nil {
			if c.note.Kind == tap.NoteEOF {
				// AHP-STDIO-001: a final line without "\n" is a frame too,
				// reported as unterminated.
				fr.End(conn, c.dir, c.note.Time)
			}
			a.Note(*c.note)
			t.inFlight.Add(-1)
			continue
		}
		fr.Write(conn, c.dir, c.t, c.b) // the framer copies what it keeps
		t.inFlight.Add(-1)
		t.chunkB.Add(-int64(cap(*c.buf)))
		putChunk(c.buf)
		t.chunkRoom()
	}
	// A stream that never ended (the harness still holds our stdin open)
	// is not flushed: its partial line was never a frame.
	t.countLostLines()
}

// countLostLines counts the lines of dropped chunks as frames not audited.
func (t *Tap) countLostLines() {
	for _, dir := range []tap.Direction{tap.FromHarness, tap.FromBackend} {
		if n := t.lines[dir].Swap(0); n > 0 {
			t.aud.Drop(n)
		}
	}
}

// submit hands f to the auditor, which drops and counts it when the frames
// already waiting leave no room for it in AuditBytes (or, with Complete,
// waits for room: the chunk queue then fills and forwarding waits).
func (t *Tap) submit(f *tap.Frame) { t.aud.Submit(f) }

// chunkRoom tells a forwarding loop waiting for room in the chunk queue
// (Complete) that the feeder has made some.
func (t *Tap) chunkRoom() {
	if !t.cfg.Complete {
		return
	}
	select {
	case t.room <- struct{}{}:
	default:
	}
}

// waitChunkRoom queues c (Complete), waiting until the chunk queue has room
// for it in chunks and in ChunkBytes. The feeder signals room after each
// chunk it has handled; the timer is a backstop for the
// other direction's loop taking the one signal.
func (t *Tap) waitChunkRoom(c chunk, size int64) {
	tick := time.NewTimer(time.Millisecond)
	defer tick.Stop()
	for {
		if t.chunkB.Add(size) <= t.cfg.ChunkBytes || t.chunkB.Load() == size {
			select {
			case t.chunks <- c:
				return
			default:
			}
		}
		t.chunkB.Add(-size)
		tick.Reset(time.Millisecond)
		select {
		case <-t.room:
		case <-tick.C:
		}
	}
}
