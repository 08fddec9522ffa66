package auditlink

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// An Outcome is how a link ended, as Feed saw it.
type Outcome struct {
	// Result is the forwarding process's, from its end record.
	Result stdio.Result
	// Clean says the end record came: the forwarding process ended the
	// link itself. Otherwise it was killed, and Feed fed a `killed` note.
	Clean bool
	// Abandoned counts the lines Feed did not check because the end
	// record's deadline had come (they are among the session's
	// NotAudited, TAP-1).
	Abandoned uint64
}

// Feed feeds every record of the link to s, in order, until the link
// ends: stream bytes with s.Stream (the session's framer cuts them as the
// in-process tap's does), losses with s.StreamLost and s.Lost, notes with
// s.Note. It does not close s.
//
// Once the end record has given a deadline, Feed checks until reserve
// before it and then only counts: the lines of every chunk left are not
// audited (s.Lost, TAP-1), the notes are still fed (they cost nothing and
// the lifecycle rules need them). So the audit of a clean end finishes
// within the forwarding process's --drain, and what it could not check is
// said, never silently left out.
func Feed(rd *Reader, s *tap.Session, conn string, reserve time.Duration) Outcome {
	var out Outcome
	var last time.Time
	var abandoned [3]bool // by direction: the stream was left at a chunk not checked
	abandoning := false
	var pending uint64 // lines abandoned and not yet told to s
	for {
		// Deadlines pass while the link is quiet (issue 21 item 8): once
		// every record read by a pending intercept's deadline (and a
		// little after) has been checked, the session is told the time,
		// and reports CORR-3 then rather than at the end of the stream.
		// A live conduct client watching the session is told the time
		// while the link is quiet, too (tap.Clocker).
		var wake time.Time
		if !abandoning {
			wake = s.NextClock()
		}
		rec, err, idle := rd.NextBefore(wake)
		if idle {
			s.Clock(time.Now().Add(-tap.ClockGrace))
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				s.Note(tap.Note{Kind: tap.NoteUpstreamFailure, Time: time.Now(), Conn: conn,
					Detail: "reading the audit link: " + err.Error()})
			}
			break
		}
		last = rec.Time
		if rec.Loss && rec.Dir != 0 {
			s.StreamLost(conn, rec.Dir)
		}
		if rec.LossOther && rec.Dir != 0 {
			s.StreamLost(conn, otherStream(rec.Dir))
		}
		if rec.Lost > 0 {
			s.Lost(rec.Lost)
		}
		if !abandoning {
			if d := rd.Deadline(); !d.IsZero() && time.Now().After(d.Add(-reserve)) {
				abandoning = true
			}
		}
		switch rec.Kind {
		case RecordChunk:
			if abandoning {
				if !abandoned[rec.Dir%3] && rec.Dir != 0 {
					abandoned[rec.Dir%3] = true
					s.StreamLost(conn, rec.Dir) // the line in progress is cut
				}
				n := uint64(bytes.Count(rec.Payload, []byte{'\n'}))
				out.Abandoned += n
				pending += n // told once, before the next note
				continue
			}
			s.Stream(conn, rec.Dir, rec.Time, rec.Payload)
		case RecordNote:
			s.Lost(pending)
			pending = 0
			var n tap.Note
			if json.Unmarshal(rec.Payload, &n) != nil {
				continue
			}
			s.Note(n) // an EOF ends its stream: a last line without "\n" is a frame too
		case RecordEnd:
			out.Clean = json.Unmarshal(rec.Payload, &out.Result) == nil
		}
	}
	s.Lost(pending)
	if !out.Clean {
		// A line the forwarding process was in the middle of is not a
		// frame: nothing was said about how it would have ended.
		s.Note(tap.Note{Kind: tap.NoteKilled, Time: time.Now(), Conn: conn,
			Detail: "the forwarding process ended without closing the audit link (killed, e.g. its process group was sent SIGKILL); last record at " + last.UTC().Format(time.RFC3339Nano)})
	}
	return out
}
