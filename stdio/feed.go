package stdio

import (
	"github.com/ahp-tap/ahp-tap/tap"
)

// newAuditor puts the configured session (or engine) behind an auditor
// whose goroutine runs at the audit priority and releases each frame's
// bytes from the audit budget when it takes the frame. It returns nil for
// pure forwarding.
func (t *Tap) newAuditor() *tap.Auditor {
	s := t.cfg.Session
	if s == nil && t.cfg.Engine != nil {
		s = tap.NewEngineSession(t.cfg.Engine, t.cfg.Sink, t.cfg.Recorder)
	}
	if s == nil {
		return nil
	}
	return s.Audit(tap.AuditorConfig{
		Queue: t.cfg.Queue,
		Begin: func() { backgroundThread(t.cfg.AuditPriority) },
		Taken: func(f *tap.Frame) { t.queued.Add(-int64(len(f.Raw))) },
	})
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
			continue
		}
		fr.Write(conn, c.dir, c.t, c.b) // the framer copies what it keeps
		t.chunkB.Add(-int64(cap(*c.buf)))
		putChunk(c.buf)
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

// submit hands f to the auditor unless the frames already waiting hold
// more than AuditBytes: then f is dropped and counted, so that a slow
// auditor never holds unbounded memory.
func (t *Tap) submit(f *tap.Frame) {
	a := t.aud
	n := int64(len(f.Raw))
	if t.queued.Load()+n > t.cfg.AuditBytes && t.queued.Load() > 0 {
		a.Drop(1)
		return
	}
	t.queued.Add(n)
	if !a.Submit(f) {
		t.queued.Add(-n)
	}
}
