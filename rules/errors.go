package rules

import (
	"slices"

	"github.com/ahp-tap/ahp-tap/tap"
)

// errorRule checks BASE-7 (AHP-RPC-002), the backend's side of unsupported
// semantics: a request it cannot support gets the defined JSON-RPC error
// (-32001 unsupported protocol version, -32002 unsupported event, -32601
// unknown method), not a success; and a notification gets no response at all.
//
// A notification has no id, so an answer to one can only be recognised
// indirectly. To keep false positives at zero, a response counts as one
// only when it matches no request and either
//   - the link is a per_event stdio backend whose process received a
//     notification (every line it writes answers that notification),
//   - its id is null (or absent) and the last harness message on its
//     connection was a notification, or
//   - its id is the event.id of a notification (a backend echoing the event).
type errorRule struct{ info tap.RuleInfo }

func errorRules() []tap.Rule {
	return []tap.Rule{errorRule{info("BASE-7/defined-errors", "BASE-7",
		"unsupported requests get the defined JSON-RPC error; notifications get no response")}}
}

func (r errorRule) Info() tap.RuleInfo { return r.info }

func (r errorRule) Requires() []*tap.Analysis { return []*tap.Analysis{answersAnalysis} }

func (r errorRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	m, ok := f.Msg.(*tap.Response)
	if !ok {
		return nil
	}
	if answersOf(c).notification {
		return []tap.Finding{r.info.At(f, 0, "", "the backend answered a notification (hooks/observe); a notification gets no response, neither result nor error")}
	}
	x := c.Exchange()
	if x == nil || c.Correlation() != tap.Matched {
		return nil
	}
	us := unsupportedReasons(c, x.Request)
	if len(us) == 0 {
		return nil
	}
	if m.Error == nil {
		return []tap.Finding{r.info.At(f, tap.Error, "/result", "the request's %s, yet the backend answered with success; it must answer with error %d", us[0].what, us[0].code)}
	}
	cv := m.Error.Get("code")
	if !cv.IsInteger() {
		return nil // BASE-1 reports a non-integer code
	}
	code, fits := cv.Int() // an integer beyond 64 bits is no defined code
	if !fits || !slices.ContainsFunc(us, func(u unsupported) bool { return u.code == code }) {
		return []tap.Finding{r.info.At(f, tap.Warn, "/error/code", "the request's %s; the backend refused it with error %s instead of the defined %d", us[0].what, cv.Str, us[0].code)}
	}
	return nil
}

// unsupportedReasons lists everything that makes req unsupported for a
// backend: an unknown method or event type (BASE-3), a protocolVersion
// other than the snapshot, an observe-only event sent by hooks/intercept.
func unsupportedReasons(c *tap.Conversation, req *tap.Frame) []unsupported {
	var out []unsupported
	if u, ok := unknownSemantics(req); ok {
		out = append(out, u)
	}
	if v, ok := req.Params().Get("protocolVersion").Text(); ok && v != c.Snapshot {
		out = append(out, unsupported{"/params/protocolVersion", "protocolVersion " + quoted(v) + " is not the snapshot " + quoted(c.Snapshot), codeUnsupportedVersion})
	}
	if req.Method() == methodIntercept {
		if t, ok := req.Event().Get("type").Text(); ok {
			if interceptable, known := wireEvents[t]; known && !interceptable {
				out = append(out, unsupported{"/params/event/type", "event type " + quoted(t) + " is observe-only and cannot be intercepted", codeUnsupportedEvent})
			}
		}
	}
	return out
}

// answersAnalysis recognises, for BASE-7 and CORR-2, a response that
// answers no request but a notification or an unparseable message. It
// follows what the harness sent, frame by frame (notifWatch), and its
// result is the frame's answers.
var answersAnalysis = &tap.Analysis{Name: "answers", Run: func(c *tap.Conversation, f *tap.Frame) any {
	trackNotifications(c, f)
	return answers{notification: notificationAnswered(c, f), malformed: malformedAnswered(c, f)}
}}

// answers says what a response that matches no request answers instead.
type answers struct {
	notification bool // a notification (the backend must not answer it)
	malformed    bool // an unparseable message: a null-id error is its standard answer
}

// answersOf returns answersAnalysis's result for the frame being checked.
func answersOf(c *tap.Conversation) answers {
	a, _ := c.Result(answersAnalysis).(answers)
	return a
}

// notifWatch is what answersAnalysis keeps per conversation: per
// connection, the kind of the last harness message and whether that
// connection has carried a request; and the event ids of recent
// notifications.
type notifWatch struct {
	conns    map[string]*connWatch
	eventIDs map[string]bool
	order    []string // eventIDs in arrival order, to bound the set
}

type connWatch struct {
	lastWasNotification bool
	lastWasMalformed    bool // not a request or notification (BASE-1's)
	sawRequest          bool
}

// maxWatchedEventIDs bounds the memory of notification event ids.
const maxWatchedEventIDs = 1024

func notifState(c *tap.Conversation) *notifWatch {
	return c.RuleState("BASE-7/notifications", func() any {
		return &notifWatch{conns: make(map[string]*connWatch), eventIDs: make(map[string]bool)}
	}).(*notifWatch)
}

// trackNotifications records harness frame f, once per frame
// (answersAnalysis).
func trackNotifications(c *tap.Conversation, f *tap.Frame) {
	w := notifState(c)
	if f.Dir != tap.FromHarness {
		return
	}
	cw := w.conns[f.Conn]
	if cw == nil {
		cw = &connWatch{}
		w.conns[f.Conn] = cw
	}
	cw.lastWasNotification, cw.lastWasMalformed = false, false
	switch f.Msg.(type) {
	case *tap.Notification:
		cw.lastWasNotification = true
		if id, ok := f.Event().Get("id").Text(); ok && id != "" && !w.eventIDs[id] {
			w.eventIDs[id] = true
			w.order = append(w.order, id)
			if len(w.order) > maxWatchedEventIDs {
				delete(w.eventIDs, w.order[0])
				w.order = w.order[1:]
			}
		}
	case *tap.Request:
		cw.sawRequest = true
	default:
		cw.lastWasMalformed = true // a null-id error may answer it
	}
}

// malformedAnswered reports whether response f is a JSON-RPC error with a
// null id right after a harness message that was no request or
// notification: the standard answer to an unparseable request (-32700,
// -32600), not an unknown id.
func malformedAnswered(c *tap.Conversation, f *tap.Frame) bool {
	m, ok := f.Msg.(*tap.Response)
	if !ok || m.Error == nil || !m.ID.IsNull() {
		return false
	}
	cw := notifState(c).conns[f.Conn]
	return cw != nil && cw.lastWasMalformed
}

// notificationAnswered reports whether response f, which matches no
// request, is recognisably an answer to a notification (see errorRule).
func notificationAnswered(c *tap.Conversation, f *tap.Frame) bool {
	m, ok := f.Msg.(*tap.Response)
	if !ok || c.Correlation() != tap.Unsolicited {
		return false
	}
	w := notifState(c)
	cw := w.conns[f.Conn]
	switch {
	case cw != nil && c.Lifecycle == "per_event" && cw.lastWasNotification && !cw.sawRequest:
		return true // AHP-STDIO-001: this process got one notification and owes nothing
	case cw != nil && (m.ID == nil || m.ID.IsNull()) && cw.lastWasNotification:
		return true // an id-less answer right after a notification
	}
	id, ok := m.ID.Text()
	return ok && w.eventIDs[id]
}
