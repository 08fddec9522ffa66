package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"fmt"
	"mime"
	"net"
	"net/url"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// The HTTP binding checks (AHP-HTTP-001, AHP-AUTH-001). They read the
// envelope an HTTP adapter puts on each frame (tap.HTTPMeta) and the
// NoteHTTPResponse / NoteUpstreamFailure notes for responses that carry no
// JSON-RPC message. Frames from other transports are none of their business.
func httpRules() []tap.Rule {
	return []tap.Rule{
		httpMessageRule{info("HTTP-1/message", vocab.HTTP1,
			"each message is one POST with a body and Content-Type: application/json; responses with a body are application/json")},
		httpStatusRule{info("HTTP-2/status", vocab.HTTP2,
			"200 with the JSON-RPC response for requests, 202/204 with an empty body for notifications; 401 only as a challenge; no redirects")},
		httpTLSRule{info("HTTP-3/tls", vocab.HTTP3,
			"a backend off loopback is reached over https")},
		authRule{info("AUTH-1/credential", vocab.Auth1,
			"one Authorization header; the credential never appears in a body")},
	}
}

// header returns the values of the header named name, ignoring case (the
// adapter keeps names as they were on the wire).
func header(h map[string][]string, name string) []string {
	if vs, ok := h[name]; ok {
		return vs
	}
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			return vs
		}
	}
	return nil
}

// isJSONMediaType reports whether a Content-Type value is application/json
// (parameters such as charset allowed).
func isJSONMediaType(v string) bool {
	if v == "application/json" {
		return true // what nearly every message carries: no parse, no allocation
	}
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == "application/json"
}

func httpFrame(f *tap.Frame) bool { return f.Transport == tap.HTTP && f.HTTP != nil }

// bodilessHTTPRequest reports whether f is an HTTP request other than a
// POST that carried no body (a GET /capabilities, say): one HTTP-1
// finding, not also a BASE-1 "not JSON" about a body nobody sent.
func bodilessHTTPRequest(f *tap.Frame) bool {
	return httpFrame(f) && f.Dir == tap.FromHarness && f.Size == 0 && !f.Truncated &&
		f.HTTP.Method != "" && f.HTTP.Method != "POST"
}

// httpMessageRule checks HTTP-1: every message is one POST whose body is
// one JSON-RPC object, sent as application/json; a response carrying a
// JSON-RPC message is application/json too. Whether the body is valid JSON
// (an empty one is not), or a batch, is BASE-1's to say.
type httpMessageRule struct{ info tap.RuleInfo }

func (r httpMessageRule) Info() tap.RuleInfo { return r.info }

func (r httpMessageRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if !httpFrame(f) {
		return nil
	}
	var out []tap.Finding
	m := f.HTTP
	if f.Dir == tap.FromHarness {
		switch {
		case bodilessHTTPRequest(f):
			return []tap.Finding{r.info.At(f, 0, "", "the request used HTTP method %s with no body; every AHP message is one POST whose body is one JSON-RPC object", m.Method)}
		case m.Method != "" && m.Method != "POST":
			out = append(out, r.info.At(f, 0, "", "the request used HTTP method %s; every AHP message is sent as one POST", m.Method))
		}
		if f.Size == 0 && !f.Truncated {
			return out // an empty body is not JSON: BASE-1 reports it (one fault, one finding)
		}
	}
	cts := header(m.Header, "Content-Type")
	switch {
	case len(cts) == 0:
		out = append(out, r.info.At(f, 0, "", "the %s has no Content-Type header; it must be application/json", httpWho(f)))
	case len(cts) > 1 || !isJSONMediaType(cts[0]):
		out = append(out, r.info.At(f, 0, "", "the %s has Content-Type %q; it must be application/json", httpWho(f), strings.Join(cts, ", ")))
	}
	return out
}

// httpWho names the message f carried in a finding: built only for a
// finding (it was formatted for every response).
func httpWho(f *tap.Frame) string {
	if f.Dir == tap.FromBackend {
		return fmt.Sprintf("HTTP %d response", f.HTTP.Status)
	}
	return "request"
}

// httpStatusRule checks HTTP-2: how each message is answered. It pairs a
// response with the request that came before it on the same connection (HTTP
// answers in order per connection), so it judges the status even when the
// JSON-RPC ids do not match.
type httpStatusRule struct{ info tap.RuleInfo }

// pendingHTTP is what HTTP-2 remembers of a request until its response.
type pendingHTTP struct {
	kind    string // "request", "notification", or "" when the body was not a message
	method  string
	rpcID   string
	eventID string
}

type httpStatusState struct {
	byConn map[string]pendingHTTP
}

func (r httpStatusRule) Info() tap.RuleInfo { return r.info }

func (r httpStatusRule) state(c *tap.Conversation) *httpStatusState {
	return c.RuleState(r.info.ID, func() any { return &httpStatusState{byConn: make(map[string]pendingHTTP)} }).(*httpStatusState)
}

func (r httpStatusRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if !httpFrame(f) {
		return nil
	}
	st := r.state(c)
	if f.Dir == tap.FromHarness {
		p := pendingHTTP{method: f.Method(), rpcID: tap.IDText(f.RPCID())}
		p.eventID, _ = f.Event().Get("id").Text()
		switch f.Msg.(type) {
		case *tap.Request:
			p.kind = "request"
		case *tap.Notification:
			p.kind = "notification"
		}
		st.byConn[f.Conn] = p
		return nil
	}
	p, ok := st.byConn[f.Conn]
	delete(st.byConn, f.Conn)
	// A backend frame is a response with status 200 and a body (the
	// adapter sends everything else as a note).
	if ok && p.kind == "notification" {
		return []tap.Finding{r.info.At(f, 0, "", "the %s notification was answered HTTP %d with a body; a notification is answered 202 or 204 with an empty body", methodName(p.method), f.HTTP.Status)}
	}
	return nil
}

// Note judges responses that carried no JSON-RPC message, and upstream
// failures.
func (r httpStatusRule) Note(c *tap.Conversation, n tap.Note) []tap.Finding {
	if n.HTTP == nil || (n.Kind != tap.NoteHTTPResponse && n.Kind != tap.NoteUpstreamFailure) {
		return nil
	}
	st := r.state(c)
	p, _ := st.byConn[n.Conn]
	delete(st.byConn, n.Conn)
	at := func(lvl tap.Level, format string, args ...any) []tap.Finding {
		fd := r.info.At(nil, lvl, "", format, args...)
		fd.Conn, fd.Time, fd.RPCID, fd.EventID = n.Conn, n.Time, p.rpcID, p.eventID
		return []tap.Finding{fd}
	}
	m := n.HTTP
	if n.Kind == tap.NoteUpstreamFailure {
		return at(tap.Error, "operational failure: %s; the harness received HTTP %d from ahp-tap", strings.TrimSuffix(n.Detail, "."), m.Status)
	}
	what := "the request"
	if p.method != "" {
		what = "the " + p.method + " " + p.kind
	}
	switch {
	case m.Status >= 300 && m.Status < 400:
		loc := ""
		if l := header(m.Header, "Location"); len(l) > 0 {
			loc = " to " + l[0]
		}
		return at(0, "%s was answered with an HTTP %d redirect%s; AHP endpoints do not redirect and the harness must not follow it: an operational failure", what, m.Status, loc)
	case m.Status == 401:
		if len(header(m.Header, "WWW-Authenticate")) > 0 {
			return at(tap.Info, "%s was answered 401 with a WWW-Authenticate challenge; the harness may run the authentication procedure within the deadline, and fails the delivery if it cannot", what)
		}
		return at(0, "%s was answered 401 without a WWW-Authenticate header; a 401 must be an authentication challenge", what)
	}
	switch p.kind {
	case "notification":
		if m.Status == 202 || m.Status == 204 {
			if m.BodySize > 0 {
				return at(0, "%s was answered %d with a %d-byte body; the body must be empty", what, m.Status, m.BodySize)
			}
			return nil
		}
		return at(0, "%s was answered HTTP %d; a notification is answered 202 or 204 with an empty body, any other status is an operational failure", what, m.Status)
	case "request":
		if m.Status == 200 {
			return at(0, "%s was answered 200 with an empty body; it must carry the JSON-RPC response", what)
		}
		return at(0, "%s was answered HTTP %d; a request is answered 200 with the JSON-RPC response, any other status is an operational failure", what, m.Status)
	}
	if m.Status >= 400 {
		return at(0, "the backend answered HTTP %d: an operational failure", m.Status)
	}
	return nil
}

func methodName(m string) string {
	if m == "" {
		return "(unnamed)"
	}
	return m
}

// httpTLSRule checks HTTP-3: a backend off loopback must be reached over
// https. It reports each such endpoint once.
type httpTLSRule struct{ info tap.RuleInfo }

func (r httpTLSRule) Info() tap.RuleInfo { return r.info }

func (r httpTLSRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if !httpFrame(f) || f.Dir != tap.FromHarness || f.HTTP.Upstream == "" {
		return nil
	}
	st := c.RuleState(r.info.ID, func() any { return &httpTLSState{seen: map[string]bool{}} }).(*httpTLSState)
	if f.HTTP.Upstream == st.quiet {
		return nil // a reverse tap's every request: the same upstream again
	}
	u, err := url.Parse(f.HTTP.Upstream)
	if err != nil || u.Scheme != "http" || loopbackHost(u.Hostname()) {
		st.quiet = f.HTTP.Upstream
		return nil
	}
	if st.seen[u.Host] {
		st.quiet = f.HTTP.Upstream
		return nil
	}
	st.seen[u.Host] = true
	st.quiet = f.HTTP.Upstream
	return []tap.Finding{r.info.At(f, 0, "", "the backend %s is reached over plain http:// but is not on loopback; remote AHP endpoints must use https", u.Host)}
}

// httpTLSState is what HTTP-3 remembers: the hosts reported, and the last
// upstream that called for no finding (nor will again: its host is
// reported or fine), so that it is not parsed again.
type httpTLSState struct {
	seen  map[string]bool
	quiet string
}

// loopbackHost reports whether host names this machine: localhost (and
// *.localhost) or a loopback address.
func loopbackHost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// authRule checks AUTH-1: exactly one Authorization header per request,
// and no credential the harness sent (the Authorization credential, or
// another the adapter redacts: X-Api-Key, a credential query parameter…)
// in a body, as written or escaped. The adapter replaced every occurrence
// by tap.RedactedCredential and counted them; this rule names where they
// were.
type authRule struct{ info tap.RuleInfo }

func (r authRule) Info() tap.RuleInfo { return r.info }

func (r authRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if !httpFrame(f) {
		return nil
	}
	var out []tap.Finding
	if f.Dir == tap.FromHarness && f.HTTP.AuthorizationCount > 1 {
		out = append(out, r.info.At(f, 0, "", "the request carried %d Authorization headers; a credential goes in exactly one", f.HTTP.AuthorizationCount))
	}
	if f.HTTP.CredentialInBody == 0 {
		return out
	}
	var ptrs []string
	credentialPointers(f.Tree, "", &ptrs)
	who := "harness's request"
	if f.Dir == tap.FromBackend {
		who = "backend's response"
	}
	if len(ptrs) == 0 {
		return append(out, r.info.At(f, 0, "", "the %s body contains a credential the harness sent in its request (the Authorization credential, say; redacted by ahp-tap); credentials never go into payloads", who))
	}
	for _, p := range ptrs {
		where := "the " + who + " body"
		switch {
		case strings.HasPrefix(p, "/error/data"):
			where = "the JSON-RPC error.data"
		case strings.HasSuffix(p, "/reason"):
			where = "a deny reason"
		}
		out = append(out, r.info.At(f, 0, p, "a credential the harness sent in its request (the Authorization credential, say) appears in %s (redacted by ahp-tap); credentials never go into payloads, error data or reasons", where))
	}
	return out
}

// Note reports a credential in the body of a response that carried no
// JSON-RPC message.
func (r authRule) Note(c *tap.Conversation, n tap.Note) []tap.Finding {
	if n.Kind != tap.NoteHTTPResponse || n.HTTP == nil || n.HTTP.CredentialInBody == 0 {
		return nil
	}
	fd := r.info.At(nil, 0, "", "the backend's HTTP %d response body contains a credential the harness sent in its request (redacted by ahp-tap)", n.HTTP.Status)
	fd.Conn, fd.Time = n.Conn, n.Time
	return []tap.Finding{fd}
}

// credentialPointers collects the JSON Pointers of values that held a
// redacted credential: a string containing it, or an object key.
func credentialPointers(v *tap.Value, ptr string, out *[]string) {
	if v == nil {
		return
	}
	switch v.Kind {
	case tap.String:
		if strings.Contains(v.Str, tap.RedactedCredential) {
			*out = append(*out, ptr)
		}
	case tap.Array:
		for i, e := range v.Arr {
			credentialPointers(e, tap.Ptr(ptr, i), out)
		}
	case tap.Object:
		for _, m := range v.Obj {
			p := tap.Ptr(ptr, m.Key)
			if strings.Contains(m.Key, tap.RedactedCredential) {
				*out = append(*out, p)
			}
			credentialPointers(m.Val, p, out)
		}
	}
}
