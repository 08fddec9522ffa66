package rules

import (
	"fmt"

	"github.com/ahp-tap/ahp-tap/tap"
)

// envelopeRule checks BASE-1 (AHP-RPC-001): every message is UTF-8, one JSON
// object (not a batch), without duplicate keys, with "jsonrpc":"2.0", and is
// exactly one of request, notification, success response, error response.
//
// On stdio a line that is not JSON at all is a framing fault (STDIO-1: a
// banner, a log line, half of a pretty-printed object) and is left to the
// framing rule, so one fault gives one finding.
type envelopeRule struct{ info tap.RuleInfo }

func envelopeRules() []tap.Rule {
	return []tap.Rule{envelopeRule{info("BASE-1/envelope", "BASE-1",
		"UTF-8, one JSON-RPC 2.0 object of exactly one kind, no batch, no duplicate keys")}}
}

func (r envelopeRule) Info() tap.RuleInfo { return r.info }

func (r envelopeRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if f.Unchecked() {
		return nil // TAP-1
	}
	if bodilessHTTPRequest(f) {
		return nil // a GET without a body is HTTP-1's one finding
	}
	var out []tap.Finding
	add := func(ptr, format string, args ...any) {
		out = append(out, r.info.At(f, 0, ptr, format, args...))
	}
	if f.BadUTF8 {
		add("", "the message is not valid UTF-8")
	}
	if f.SyntaxErr != nil {
		if f.Framing.Line {
			return out // STDIO-1 reports non-JSON lines
		}
		add("", "the message is not valid JSON (%v)", f.SyntaxErr)
		return out
	}
	for _, d := range f.Dups {
		add(d.Pointer, "object key %q appears more than once; duplicate keys are invalid", d.Key)
	}
	if n := f.DupCount - len(f.Dups); n > 0 {
		// Issue 8 item 6: the rest are counted, not listed one by one.
		add("", "%d more duplicate object keys in this message (only the first %d are listed)", n, len(f.Dups))
	}
	t := f.Tree
	switch t.Kind {
	case tap.Array:
		add("", "the message is a JSON array (a batch); AHP forbids batches, send one object per message")
		return out
	case tap.Object:
	default:
		add("", "the message is %s, not a JSON-RPC object", t.Describe())
		return out
	}
	if v, ok := t.Get("jsonrpc").Text(); !ok || v != "2.0" {
		add("/jsonrpc", `"jsonrpc" must be the string "2.0", found %s`, show(t.Get("jsonrpc")))
	}
	switch m := f.Msg.(type) {
	case nil:
		add("", "the object is neither a request (id, method, params), a notification (method, params) nor a response (id with result or error)")
	case *tap.Request:
		out = append(out, r.checkMethod(f, t)...)
		if !validID(m.ID) {
			add("/id", `a request "id" must be a non-empty string or an integer, found %s`, show(m.ID))
		}
		if !m.Params.Is(tap.Object) {
			add("/params", `"params" must be an object, found %s`, m.Params.Describe())
		}
		out = append(out, r.noResponseMembers(f, t)...)
		if m.Method == methodObserve {
			// AHP-RPC-002: observation is a notification; it is never answered.
			add("/id", `"hooks/observe" is a notification and must not carry an "id"`)
		}
	case *tap.Notification:
		out = append(out, r.checkMethod(f, t)...)
		if !m.Params.Is(tap.Object) {
			add("/params", `"params" must be an object, found %s`, m.Params.Describe())
		}
		out = append(out, r.noResponseMembers(f, t)...)
		if m.Method == methodIntercept || m.Method == methodCapabilities {
			add("", "%q is a request and must carry an \"id\"", m.Method)
		}
	case *tap.Response:
		if m.ID == nil {
			add("/id", `a response must carry the "id" of the request it answers`)
		} else if !validID(m.ID) && !m.ID.IsNull() {
			add("/id", `a response "id" must be a string, an integer or null, found %s`, show(m.ID))
		}
		switch {
		case m.Result != nil && m.Error != nil:
			add("", `a response carries both "result" and "error"; it must carry exactly one`)
		case m.Result == nil && m.Error == nil:
			add("", `a response must carry "result" or "error"`)
		case m.Result != nil && !m.Result.Is(tap.Object):
			add("/result", `"result" must be an object, found %s`, m.Result.Describe())
		case m.Error != nil:
			out = append(out, r.checkError(f, m.Error)...)
		}
	}
	return out
}

func (r envelopeRule) checkMethod(f *tap.Frame, t *tap.Value) []tap.Finding {
	if s, ok := t.Get("method").Text(); !ok || s == "" {
		return []tap.Finding{r.info.At(f, 0, "/method", `"method" must be a non-empty string, found %s`, show(t.Get("method")))}
	}
	return nil
}

func (r envelopeRule) noResponseMembers(f *tap.Frame, t *tap.Value) []tap.Finding {
	var out []tap.Finding
	for _, k := range []string{"result", "error"} {
		if t.Has(k) {
			out = append(out, r.info.At(f, 0, "/"+k, "a message with a method must not carry %q", k))
		}
	}
	return out
}

func (r envelopeRule) checkError(f *tap.Frame, e *tap.Value) []tap.Finding {
	if !e.Is(tap.Object) {
		return []tap.Finding{r.info.At(f, 0, "/error", `"error" must be an object with "code" and "message", found %s`, e.Describe())}
	}
	var out []tap.Finding
	if !e.Get("code").IsInteger() { // of any size (issue 22)
		out = append(out, r.info.At(f, 0, "/error/code", `"error.code" must be an integer, found %s`, show(e.Get("code"))))
	}
	if _, ok := e.Get("message").Text(); !ok {
		out = append(out, r.info.At(f, 0, "/error/message", `"error.message" must be a string, found %s`, show(e.Get("message"))))
	}
	return out
}

// validID reports whether id is a non-empty string or an integer (§2.2).
func validID(id *tap.Value) bool {
	if s, ok := id.Text(); ok {
		return s != ""
	}
	return id.IsInteger() // beyond int64 is still an integer
}

// show renders a value for a message: its JSON text when short, else its type.
func show(v *tap.Value) string {
	if v == nil {
		return "nothing (the member is absent)"
	}
	b := v.Canonical()
	if len(b) <= 40 {
		return string(b)
	}
	return fmt.Sprintf("%s of %d bytes", v.Describe(), len(b))
}
