package report

import (
	"encoding/json"
	"io"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// The live view (`--ui`) is the HTML page without embedded data, fed by
// server-sent events, each one JSON message {"t": kind, "v": value} whose
// value has the shape the page's embedded data has: "frame" and "note"
// (a conversation item), "finding", "exchange" (sent when a request opens
// one, with its deadline, and again when it ends). Live findings are
// grouped by a fingerprint without the frame's shape (the sink sees a
// finding before its frame is at hand).

// LiveGen is the session number of every live item: a live page shows one
// session.
const LiveGen = 1

// LiveFrame is the live message of a judged frame of link input.
func LiveFrame(input string, f *tap.Frame) []byte {
	return liveMessage("frame", frameItem(input, LiveGen, f, 0))
}

// LiveNote is the live message of a transport note.
func LiveNote(input string, n tap.Note) []byte {
	return liveMessage("note", noteItem(input, LiveGen, n))
}

// LiveFinding is the live message of a finding.
func LiveFinding(input string, f tap.Finding) []byte {
	hf := htmlFinding{Input: input, Check: f.Check, Rule: f.Rule, Req: f.Requirement, Level: f.Level.String(),
		Message: f.Message, Pointer: f.Pointer, Seq: f.Seq, Conn: f.Conn, RPCID: f.RPCID, EventType: printableEvent(f.EventType),
		FP: Fingerprint(f, ""), Gen: LiveGen}
	if f.Dir != 0 {
		hf.Dir = f.Dir.String()
	}
	return liveMessage("finding", hf)
}

// LiveExchange is the live message of the exchange frame f opened (a
// request: pending, with its deadline) or ended (a response: its
// outcome; the watcher sees it before the conversation files the
// response, so f is taken as the answer).
func LiveExchange(input string, f *tap.Frame, x *tap.Exchange) []byte {
	r := ExchangeOf(x)
	if _, ok := f.Msg.(*tap.Response); ok && x.Response == nil {
		r.ResponseSeq = f.Seq
		if r.Conn == "" {
			r.Conn = f.Conn
		}
		if x.Request != nil && !f.Time.IsZero() && !x.Request.Time.IsZero() {
			r.LatencyMs = float64(f.Time.Sub(x.Request.Time).Microseconds()) / 1000
		}
	}
	hx := htmlExchangeOf(input, LiveGen, &r)
	if hx.Resp == 0 {
		hx.Outcome = "" // pending, not yet unanswered
		if x.Request != nil && x.Deadline > 0 && !x.Request.Time.IsZero() {
			hx.Deadline = x.Request.Time.Add(x.Deadline).UnixMilli()
		}
	}
	return liveMessage("exchange", hx)
}

// LiveSkipped is the message telling a viewer that n messages were
// skipped because it fell behind.
func LiveSkipped(n uint64) []byte { return liveMessage("skipped", n) }

// LiveEvicted is the message telling a viewer how many of the oldest
// messages the server's ring no longer holds (they are in the capture).
func LiveEvicted(n uint64) []byte { return liveMessage("evicted", n) }

func liveMessage(kind string, v any) []byte {
	b, err := json.Marshal(struct {
		T string `json:"t"`
		V any    `json:"v"`
	}{kind, v})
	if err != nil {
		return nil
	}
	return b
}

// LivePage writes the live view's page: the report's script and style,
// the filters and the two views, no embedded data; the script connects
// to events (a path relative to the page) and renders what arrives.
func LivePage(w io.Writer, hd Header, title string) error {
	h := NewHTML(w)
	h.Title = title
	h.live = true
	h.Now = time.Now
	if err := h.Begin(&hd); err != nil {
		return err
	}
	return h.End(&End{})
}
