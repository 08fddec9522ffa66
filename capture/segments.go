package capture

import (
	"fmt"
	"io"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Replay feeds a capture's frames and notes, in file order, to one
// tap.Session per segment: each header starts a segment, written by one
// live run of ahp-tap, and open builds the session that run had. A record
// goes to the session of the segment whose header named its conn (the
// per_event processes of one harness append to one capture at once, so
// their records interleave), else to the latest segment's. Replay returns
// every session in creation order, not closed: closing them, in that
// order, gives the end-of-stream findings. A segment that promised an end
// record and has none at the end of the file was cut off: its session is
// told so (tap.Session.Cut) after its last frame.
func Replay(r *Reader, open func(h *Header) (*tap.Session, error)) ([]*tap.Session, error) {
	var (
		all    []*tap.Session
		latest *tap.Session
		byConn = map[string]*tap.Session{}
		ends   = map[*tap.Session]*segmentEnd{}
	)
	route := func(conn string) *tap.Session {
		if s, ok := byConn[conn]; ok {
			return s
		}
		return latest
	}
	for {
		it, err := r.Next()
		if err == io.EOF {
			cutOff(all, ends)
			return all, nil
		}
		if err != nil {
			return all, err
		}
		switch {
		case it.Header != nil:
			s, err := open(it.Header)
			if err != nil {
				return all, fmt.Errorf("capture line %d: %w", it.Line, err)
			}
			all = append(all, s)
			latest = s
			ends[s] = &segmentEnd{promised: it.Header.EndRecord}
			if it.Header.Conn != "" {
				byConn[it.Header.Conn] = s
			}
		case it.Frame != nil:
			s := route(it.Frame.Conn)
			ends[s].frame(it.Frame, it.Line)
			s.Frame(it.Frame)
		case it.Note != nil && it.Note.Kind == tap.NoteEnd:
			ends[route(it.Note.Conn)].ended = true // a fact about the recording, not the wire
		case it.Note != nil:
			route(it.Note.Conn).Note(*it.Note)
		}
	}
}

// segmentEnd is what Replay knows of how a segment's recording ended.
type segmentEnd struct {
	promised bool       // the header promised an end record
	ended    bool       // the end record was read
	last     *tap.Frame // the last frame recorded
	line     int        // its capture line
}

func (e *segmentEnd) frame(f *tap.Frame, line int) {
	if e != nil {
		e.last, e.line = f, line
	}
}

// cutOff tells every segment that promised an end record and has none
// that its recording was cut off.
func cutOff(all []*tap.Session, ends map[*tap.Session]*segmentEnd) {
	for _, s := range all {
		if e := ends[s]; e != nil && e.promised && !e.ended {
			s.Cut(e.last, e.line)
		}
	}
}
