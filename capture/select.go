package capture

// replay --select EXPR --write-capture FILE (issue 24 item 4): a smaller
// capture holding only the selected exchanges, which replays with the same
// findings for what it kept. See docs/capture-format.md#selecting.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// A SelectTerm is one --select expression: every condition must hold (comma
// is "and"); several --select flags are "or".
type SelectTerm struct {
	check, event, conn, id string
	from, to               time.Time
}

// ParseSelect parses "key=value,key=value" with the keys check, event,
// conn, id, from and to (RFC 3339).
func ParseSelect(expr string) (SelectTerm, error) {
	var t SelectTerm
	if strings.TrimSpace(expr) == "" {
		return t, fmt.Errorf("empty expression")
	}
	for _, part := range strings.Split(expr, ",") {
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return t, fmt.Errorf("%q is not key=value (keys: check, event, conn, id, from, to)", part)
		}
		switch k {
		case "check":
			t.check = v
		case "event":
			t.event = v
		case "conn":
			t.conn = v
		case "id":
			t.id = v
		case "from", "to":
			tm, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return t, fmt.Errorf("%s=%q is not an RFC 3339 time", k, v)
			}
			if k == "from" {
				t.from = tm
			} else {
				t.to = tm
			}
		default:
			return t, fmt.Errorf("unknown key %q (keys: check, event, conn, id, from, to)", k)
		}
	}
	return t, nil
}

// An selExchange is what the selection knows of one exchange: a request
// and its answer, or a lone frame (a notification, a line that is not
// JSON-RPC).
type selExchange struct {
	conn, id, method, event, eventID string
	time                             time.Time
	checks                           map[string]bool
}

func (x *selExchange) matches(t SelectTerm) bool {
	return (t.check == "" || x.checks[t.check]) &&
		(t.event == "" || x.event == t.event) &&
		(t.conn == "" || x.conn == t.conn) &&
		(t.id == "" || x.id == t.id || strings.Trim(x.id, `"`) == t.id) &&
		(t.from.IsZero() || !x.time.Before(t.from)) &&
		(t.to.IsZero() || x.time.Before(t.to))
}

// A selIndexer numbers the exchanges of a capture as it is read, the same
// way on every read: records are routed to segments as Replay
// routes them, and a response joins the latest request of its segment and
// conn with the same JSON-RPC id.
type selIndexer struct {
	seg    int            // segments opened so far
	byConn map[string]int // the segment whose header named a conn
	open   map[string]int // segment, conn, id -> pending exchange
	n      int            // exchanges numbered so far
}

func newSelIndexer() *selIndexer {
	return &selIndexer{byConn: map[string]int{}, open: map[string]int{}}
}

// header starts a segment and returns its number.
func (ix *selIndexer) header(h *Header) int {
	ix.seg++
	if h.Conn != "" {
		ix.byConn[h.Conn] = ix.seg
	}
	return ix.seg
}

// route is the segment of a record on conn.
func (ix *selIndexer) route(conn string) int {
	if s, ok := ix.byConn[conn]; ok {
		return s
	}
	return ix.seg
}

// end forgets the conn of an ended segment, as Replay does.
func (ix *selIndexer) end(conn string) {
	delete(ix.byConn, conn)
}

// frame returns the segment and exchange number of a frame, the exchange
// being new (fresh) or an earlier request's.
func (ix *selIndexer) frame(f *tap.Frame) (seg, x int, fresh bool, pf tap.PrefixFacts) {
	seg = ix.route(f.Conn)
	pf = tap.ScanPrefix(f.Raw)
	if pf.ID != nil {
		key := fmt.Sprintf("%d\x00%s\x00%s", seg, f.Conn, tap.IDText(pf.ID))
		if pf.Method == "" {
			if x, ok := ix.open[key]; ok {
				delete(ix.open, key)
				return seg, x, false, pf
			}
		} else {
			ix.n++
			ix.open[key] = ix.n
			return seg, ix.n, true, pf
		}
	}
	ix.n++
	return seg, ix.n, true, pf
}

// A selFinding is where a finding of the first pass is: its segment, conn
// and frame.
type selFinding struct {
	seg   int
	conn  string
	seq   uint64
	check string
}

// A Selection cuts captures: the segments of each that hold a selected
// exchange, with their headers and notes, the selected exchanges' frames,
// every exchange of the same event (a retry is judged against its first
// delivery) and the hooks/capabilities exchanges (what a response is
// judged against). The result replays with the same findings for what it
// kept.
type Selection struct {
	Terms []SelectTerm // an exchange is selected when one term matches it
	// Session builds the session of one segment whose findings go to
	// sink, as replay does.
	Session func(h *Header, sink tap.Sink) (*tap.Session, error)
}

// Write writes the selected records of the capture that open opens (three
// times: a replay for the findings, an index of the exchanges, the
// writing) to enc, and returns how many exchanges were selected.
// selectInput reads one capture three times: a replay for the findings, an
// index of the exchanges, and the writing of what is selected.
func (sel *Selection) Write(enc *json.Encoder, open func() (*Reader, func(), error)) (int, error) {
	terms := sel.Terms
	// 1. The findings, as replay has them, each placed in its segment.
	cr, closeIn, err := open()
	if err != nil {
		return 0, err
	}
	var found []selFinding
	seg := 0
	err = Replay(cr, func(h *Header) (*tap.Session, error) {
		seg++
		s := seg
		return sel.Session(h, tap.SinkFunc(func(fd tap.Finding) {
			found = append(found, selFinding{seg: s, conn: fd.Conn, seq: fd.Seq, check: fd.Check})
		}))
	}, func(s *tap.Session) { s.Close() })
	closeIn()
	if err != nil {
		return 0, err
	}
	type frameKey struct {
		seg  int
		conn string
		seq  uint64
	}
	checksAt := map[frameKey][]string{}
	for _, fd := range found {
		k := frameKey{fd.seg, fd.conn, fd.seq}
		checksAt[k] = append(checksAt[k], fd.check)
	}

	// 2. The exchanges, and which are selected.
	cr, closeIn, err = open()
	if err != nil {
		return 0, err
	}
	ix := newSelIndexer()
	cur := map[int]*selExchange{} // exchanges waiting for their answer
	selected := map[int]bool{}
	events := map[string]bool{}
	segs := map[int]bool{}
	eventSegs := map[string][]int{} // the segments each event was delivered in
	decide := func(n, seg int, x *selExchange) {
		for _, t := range terms {
			if x.matches(t) {
				selected[n] = true
				segs[seg] = true
				if x.eventID != "" {
					events[x.eventID] = true
				}
				return
			}
		}
	}
	for {
		it, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			closeIn()
			return 0, err
		}
		switch {
		case it.Header != nil:
			ix.header(it.Header)
		case it.Note != nil && it.Note.Kind == tap.NoteEnd:
			ix.end(it.Note.Conn)
		case it.Frame != nil:
			seg, n, fresh, pf := ix.frame(it.Frame)
			x := cur[n]
			if fresh {
				if pf.EventID != "" {
					if l := eventSegs[pf.EventID]; len(l) == 0 || l[len(l)-1] != seg {
						eventSegs[pf.EventID] = append(l, seg)
					}
				}
				x = &selExchange{conn: it.Frame.Conn, method: pf.Method, event: pf.EventType,
					eventID: pf.EventID, time: it.Frame.Time, checks: map[string]bool{}}
				if pf.ID != nil {
					x.id = tap.IDText(pf.ID)
				}
			}
			for _, c := range checksAt[frameKey{seg, it.Frame.Conn, it.Frame.Seq}] {
				x.checks[c] = true
			}
			if fresh && pf.ID != nil && pf.Method != "" {
				cur[n] = x // decided at its answer, or at the end
				continue
			}
			delete(cur, n)
			decide(n, seg, x)
		}
	}
	closeIn()
	for n, x := range cur {
		// Never answered: its findings (CORR-2, CORR-3) are on the
		// request's frame.
		decide(n, ix.route(x.conn), x)
	}
	for ev := range events {
		for _, sg := range eventSegs[ev] {
			segs[sg] = true
		}
	}

	// 3. Write the kept segments: headers, notes, selected frames.
	cr, closeIn, err = open()
	if err != nil {
		return 0, err
	}
	defer closeIn()
	ix = newSelIndexer()
	keep := map[int]bool{}
	for {
		it, err := cr.Next()
		if err == io.EOF {
			return len(selected), nil
		}
		if err != nil {
			return 0, err
		}
		var rec any
		switch {
		case it.Header != nil:
			if segs[ix.header(it.Header)] {
				rec = it.Header
			}
		case it.Note != nil:
			if segs[ix.route(it.Note.Conn)] {
				rec = Record{Type: "note", Time: it.Note.Time, Conn: it.Note.Conn, Note: it.Note}
			}
			if it.Note.Kind == tap.NoteEnd {
				ix.end(it.Note.Conn)
			}
		case it.Frame != nil:
			seg, n, fresh, pf := ix.frame(it.Frame)
			if fresh {
				keep[n] = segs[seg] && (selected[n] ||
					(pf.EventID != "" && events[pf.EventID]) || pf.Method == vocab.MethodCapabilities)
			}
			if keep[n] {
				rec = FrameRecord(it.Frame)
			}
			if !fresh || pf.ID == nil || pf.Method == "" {
				delete(keep, n) // the exchange is complete
			}
		}
		if rec != nil {
			if err := enc.Encode(rec); err != nil {
				return 0, err
			}
		}
	}
}
