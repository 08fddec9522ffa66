package stdio

import (
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// truncatedPrefix is how much of a line longer than MaxAuditLine is kept.
const truncatedPrefix = 4 << 10

// feed is the one goroutine between the forwarding loops and the auditor:
// it cuts each direction's audit copy into lines (AHP-STDIO-001 framing)
// and submits them as frames, with the transport notes in between, in the
// order the chunks were read. It never touches the forwarded bytes.
func (t *Tap) feed() {
	defer close(t.fed)
	backgroundThread(t.cfg.AuditPriority)
	a := t.aud
	var now time.Time // read time of the chunk being split
	var seq uint64    // of the last frame cut
	split := map[tap.Direction]*tap.Splitter{}
	for _, dir := range []tap.Direction{tap.FromHarness, tap.FromBackend} {
		split[dir] = &tap.Splitter{Max: t.cfg.MaxAuditLine, Emit: func(line []byte, fr tap.Framing, size int, truncated bool) {
			seq++ // numbered here, so a frame dropped later leaves a gap
			if truncated {
				// A truncated line is never decoded: keep only enough of
				// it for people to recognise it in the log and capture.
				line = line[:min(len(line), truncatedPrefix)]
			}
			t.submit(&tap.Frame{Seq: seq, Dir: dir, Time: now, Transport: tap.Stdio, Conn: t.cfg.Conn,
				Raw: append([]byte(nil), line...), Framing: fr, Size: size, Truncated: truncated})
		}}
	}
	for c := range t.chunks {
		if a == nil {
			continue
		}
		s := split[c.dir]
		if c.lost && s != nil {
			s.Lost()
		}
		if c.note != nil {
			now = c.note.Time
			if c.note.Kind == tap.NoteEOF && s != nil {
				// AHP-STDIO-001: a final line without "\n" is a frame too,
				// reported as unterminated.
				s.Close()
			}
			a.Note(*c.note)
			continue
		}
		now = c.t
		s.Write(c.b) // the splitter copies what it keeps
		t.chunkB.Add(-int64(cap(*c.buf)))
		putChunk(c.buf)
	}
	if a != nil {
		var skipped uint64
		for dir, s := range split {
			skipped += uint64(s.Skipped()) + t.lines[dir].Load()
		}
		a.Drop(skipped)
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

// budgetRecorder releases a frame's bytes from the audit budget when the
// auditor takes it off the queue, then passes it on. It runs on the audit
// goroutine, which it moves to a low-priority thread on first use.
type budgetRecorder struct {
	t       *Tap
	inner   tap.Recorder
	bg      bool // only touched on the audit goroutine: backgroundThread has run
	partial bool // only touched on the audit goroutine: the conversation was marked partial
}

func (r *budgetRecorder) background() {
	if !r.bg {
		r.bg = true
		backgroundThread(r.t.cfg.AuditPriority)
	}
}

func (r *budgetRecorder) Record(f *tap.Frame) {
	r.background()
	if !r.partial && (r.t.aud.Dropped() > 0 || r.t.nchunk.Load() > 0) {
		// Frames were lost: from now on the conversation is an excerpt,
		// so a response whose request was dropped (or the reverse) is not
		// reported as unsolicited or unanswered. TAP-1 says what was lost.
		r.partial = true
		r.t.cfg.Engine.Conversation().Partial = true
	}
	r.t.queued.Add(-int64(len(f.Raw)))
	if r.inner != nil {
		r.inner.Record(f)
	}
}

func (r *budgetRecorder) RecordNote(n tap.Note) {
	r.background()
	if r.inner != nil {
		r.inner.RecordNote(n)
	}
}
