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
// order, gives the end-of-stream findings.
func Replay(r *Reader, open func(h *Header) (*tap.Session, error)) ([]*tap.Session, error) {
	var (
		all    []*tap.Session
		latest *tap.Session
		byConn = map[string]*tap.Session{}
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
			if it.Header.Conn != "" {
				byConn[it.Header.Conn] = s
			}
		case it.Frame != nil:
			route(it.Frame.Conn).Frame(it.Frame)
		case it.Note != nil:
			route(it.Note.Conn).Note(*it.Note)
		}
	}
}
