package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"strconv"

	"github.com/ahp-tap/ahp-tap/tap"
)

// JSON-RPC error codes a backend must use for unsupported requests (§2.5).
const (
	codeUnsupportedVersion = -32001
	codeUnsupportedEvent   = -32002
	codeMethodNotFound     = -32601
)

// knownMethod reports whether m is one of the three AHP methods.
func knownMethod(m string) bool {
	return m == methodIntercept || m == methodObserve || m == methodCapabilities
}

// An unsupported is what makes a request or notification unsupported
// semantics for its receiver, and the JSON-RPC error a backend must answer
// a request of it with (AHP-RPC-002).
type unsupported struct {
	ptr  string // where in the frame
	what string // one phrase for messages
	code int64  // the defined error code
}

// unknownSemantics reports an unknown method or an unknown event type in f
// (BASE-3's own subject), or ok=false.
func unknownSemantics(f *tap.Frame) (unsupported, bool) {
	m := f.Method()
	if _, isStr := f.Tree.Get("method").Text(); !isStr || m == "" {
		return unsupported{}, false // BASE-1 reports a missing method
	}
	if !knownMethod(m) {
		return unsupported{"/method", "method " + quoted(m) + " is not an AHP method (hooks/intercept, hooks/observe, hooks/capabilities)", codeMethodNotFound}, true
	}
	t, ok := f.Event().Get("type").Text()
	if !ok || m == methodCapabilities {
		return unsupported{}, false // EVT-1 reports a missing or non-string type
	}
	if _, known := wireEvents[t]; !known {
		return unsupported{"/params/event/type", "event type " + quoted(t) + " is not in the AHP event catalogue", codeUnsupportedEvent}, true
	}
	return unsupported{}, false
}

// quoted renders a string for a message, as a JSON string literal.
func quoted(s string) string { return strconv.Quote(s) }

// unknownRule checks BASE-3 (AHP-CORE-003): unknown event types and unknown
// methods are unsupported semantics. Unknown object fields are never
// findings. A notification carrying them is an error at once: nothing will
// refuse it on the wire. For a request the verdict waits for the backend: a
// correct refusal (-32002 or -32601) leaves a warning, a success an error,
// and no answer at the end of the stream an error.
type unknownRule struct{ info tap.RuleInfo }

func unknownRules() []tap.Rule {
	return []tap.Rule{unknownRule{info("BASE-3/unknown", vocab.Base3,
		"unknown event types and methods are unsupported semantics; unknown fields are ignored")}}
}

func (r unknownRule) Info() tap.RuleInfo { return r.info }

// unknownState holds the requests with unsupported semantics still waiting
// for their answer, by IDKey.
type unknownState struct {
	waiting map[string]unknownWait
}

type unknownWait struct {
	req *tap.Frame
	u   unsupported
}

func (r unknownRule) state(c *tap.Conversation) *unknownState {
	return c.RuleState(r.info.ID, func() any {
		return &unknownState{waiting: make(map[string]unknownWait)}
	}).(*unknownState)
}

func (r unknownRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	switch m := f.Msg.(type) {
	case *tap.Notification:
		if u, ok := unknownSemantics(f); ok {
			return []tap.Finding{r.info.At(f, tap.Error, u.ptr, "%s: unsupported semantics in a notification, which nothing can refuse; the receiver must not act on it", u.what)}
		}
	case *tap.Request:
		u, ok := unknownSemantics(f)
		if !ok {
			return nil
		}
		if c.Partial {
			return []tap.Finding{r.info.At(f, tap.Error, u.ptr, "%s: unsupported semantics; a backend must refuse the request with error %d", u.what, u.code)}
		}
		r.state(c).waiting[tap.IDKey(m.ID)] = unknownWait{f, u}
	case *tap.Response:
		x := c.Exchange()
		if x == nil {
			return nil
		}
		st := r.state(c)
		w, ok := st.waiting[x.Key]
		if !ok || w.req != x.Request {
			return nil
		}
		delete(st.waiting, x.Key)
		if m.Error != nil {
			if code, _ := m.Error.Get("code").Int(); code == w.u.code {
				return []tap.Finding{r.info.At(w.req, tap.Warn, w.u.ptr, "%s: unsupported semantics (the backend refused it correctly with error %d)", w.u.what, code)}
			}
			return []tap.Finding{r.info.At(w.req, tap.Warn, w.u.ptr, "%s: unsupported semantics (the backend refused it, though not with the defined error %d)", w.u.what, w.u.code)}
		}
		return []tap.Finding{r.info.At(w.req, tap.Error, w.u.ptr, "%s: unsupported semantics, and the backend accepted it with a success result (#%d) instead of error %d", w.u.what, f.Seq, w.u.code)}
	}
	return nil
}

// Finish reports requests with unsupported semantics that were never
// answered: nothing on the wire refused them.
func (r unknownRule) Finish(c *tap.Conversation) []tap.Finding {
	if c.Partial {
		return nil
	}
	st := r.state(c)
	var out []tap.Finding
	for _, x := range c.Exchanges() {
		if w, ok := st.waiting[x.Key]; ok && w.req == x.Request {
			out = append(out, r.info.At(w.req, tap.Error, w.u.ptr, "%s: unsupported semantics, and no refusal (error %d) came before the stream ended", w.u.what, w.u.code))
		}
	}
	return out
}
