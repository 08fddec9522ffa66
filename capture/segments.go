package capture

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Replay feeds a capture's frames and notes, in file order, to one
// tap.Session per segment: each header starts a segment, written by one
// live run of ahp-tap, and open builds the session that run had. A record
// goes to the session of the segment whose header named its conn (the
// per_event processes of one harness append to one capture at once, so
// their records interleave), else to the latest segment's.
//
// done is given each session, not closed, as soon as its segment is
// complete: when its end record is read, or at the end of the file for a
// segment without one; closing it then gives its end-of-stream findings,
// as the live run gave them when it ended. Replay keeps nothing of a
// segment it has handed over, so a capture of many segments (a per_event
// backend writes one per event) replays in memory bounded by the
// segments open at once, not by their number. A segment that promised an
// end record and has none at the end of the file was cut off: its session
// is told so (tap.Session.Cut) after its last frame, before done.
func Replay(r *Reader, open func(h *Header) (*tap.Session, error), done func(*tap.Session)) error {
	sr := &segmenter{open: open, done: done, byConn: map[string]*segment{}}
	for {
		it, err := r.Next()
		if err == io.EOF {
			sr.end()
			return nil
		}
		if err != nil {
			return err
		}
		if err := sr.take(it); err != nil {
			return err
		}
	}
}

// A segmenter routes the items of one capture to its segments' sessions.
type segmenter struct {
	open func(h *Header) (*tap.Session, error)
	done func(*tap.Session)
	// live holds the segments not handed over yet, in creation order
	// (nil where one was handed over, compacted as it goes).
	live   []*segment
	latest *segment
	byConn map[string]*segment
	ended  int // nils in live
}

func (sr *segmenter) route(conn string) *segment {
	if sg, ok := sr.byConn[conn]; ok {
		return sg
	}
	return sr.latest
}

func (sr *segmenter) finish(sg *segment) {
	if sg.done {
		return
	}
	sg.done = true
	if sg.conn != "" && sr.byConn[sg.conn] == sg {
		delete(sr.byConn, sg.conn)
	}
	for i, o := range sr.live {
		if o == sg {
			sr.live[i] = nil
			sr.ended++
			break
		}
	}
	if sr.ended > len(sr.live)/2 {
		sr.live = slices.DeleteFunc(sr.live, func(o *segment) bool { return o == nil })
		sr.ended = 0
	}
	sr.done(sg.s)
}

// end hands over every segment still open: the file ended.
func (sr *segmenter) end() {
	for _, sg := range sr.live {
		if sg == nil {
			continue
		}
		if sg.promised && !sg.ended {
			sg.s.Cut(sg.last, sg.line)
		}
		sr.finish(sg)
	}
	sr.live = nil
}

// take feeds one item to its segment's session.
func (sr *segmenter) take(it Item) error {
	switch {
	case it.Header != nil:
		s, err := sr.open(it.Header)
		if err != nil {
			return fmt.Errorf("capture line %d: %w", it.Line, err)
		}
		sg := &segment{s: s, conn: it.Header.Conn, promised: it.Header.EndRecord}
		sr.live = append(sr.live, sg)
		sr.latest = sg
		if sg.conn != "" {
			sr.byConn[sg.conn] = sg
		}
	case it.Frame != nil:
		sg := sr.route(it.Frame.Conn)
		sg.last, sg.line = it.Frame, it.Line
		sg.s.Frame(it.Frame)
	case it.Note != nil && it.Note.Kind == tap.NoteEnd:
		// A fact about the recording, not the wire: the segment is
		// complete.
		sg := sr.route(it.Note.Conn)
		sg.ended = true
		sr.finish(sg)
	case it.Note != nil:
		sr.route(it.Note.Conn).s.Note(*it.Note)
	}
	return nil
}

// A segment is one live run's part of a capture, as Replay reads it.
type segment struct {
	s        *tap.Session
	conn     string     // the header's conn ("" for none)
	promised bool       // the header promised an end record
	ended    bool       // the end record was read
	done     bool       // handed over
	last     *tap.Frame // the last frame recorded
	line     int        // its capture line
}

// Stores gives each replayed segment the event store its live run had:
// segments whose headers name the same --state directory share one (their
// processes shared the directory, so a retry is judged against an earlier
// process's delivery, BASE-6); a segment without one gets a store of its
// own. The zero value is not ready: use NewStores.
type Stores struct {
	byState map[string]*tap.MemoryStore
}

// NewStores returns an empty set of stores.
func NewStores() *Stores { return &Stores{byState: map[string]*tap.MemoryStore{}} }

// For returns the event store of the segment h opens.
func (st *Stores) For(h *Header) *tap.MemoryStore {
	if h.State == "" {
		return &tap.MemoryStore{}
	}
	s, ok := st.byState[h.State]
	if !ok {
		s = &tap.MemoryStore{}
		st.byState[h.State] = s
	}
	return s
}

// Overrides names the settings given on the command line: they win over
// what a capture header says.
type Overrides struct {
	Snapshot, Timeout, Registration, Hook bool
}

// Config is the engine configuration of the segment h opens: base with the
// live run's settings from its header (binding, snapshot, deadline,
// registration and hook, lifecycle), unless o says the command line gave
// them.
func (h *Header) Config(base tap.Config, o Overrides) (tap.Config, error) {
	cfg := base
	cfg.Transport = h.Transport
	if h.Snapshot != "" && !o.Snapshot {
		cfg.Snapshot = h.Snapshot
	}
	if h.TimeoutMs > 0 && !o.Timeout {
		cfg.Timeout = time.Duration(h.TimeoutMs) * time.Millisecond
	}
	if len(h.RegistrationDoc) > 0 && !o.Registration {
		reg, _, err := tap.ParseJSON(h.RegistrationDoc)
		if err != nil {
			return cfg, fmt.Errorf("header registrationDoc is not JSON: %v", err)
		}
		cfg.Registration = reg
		if !o.Hook {
			cfg.HookID = h.Hook
		}
	}
	// A --registration given on the command line says the lifecycle when
	// its hook declares one (mock harness switches to one process per
	// message by it, issue 21 item 12); otherwise the live run's header.
	if h.Lifecycle != "" && (!o.Registration || cfg.Resolved().Lifecycle == "") {
		cfg.Lifecycle = h.Lifecycle
	}
	return cfg, nil
}
