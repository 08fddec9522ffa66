package rules

import (
	"mime"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

const (
	httpIntercept = `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1"}}}`
	httpObserve   = `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":{"id":"e2"}}}`
	httpResult    = `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`
)

var jsonHeader = map[string][]string{"Content-Type": {"application/json"}}

// httpReq builds a harness POST frame on conn c1.
func httpReq(body string, mod func(*tap.HTTPMeta)) *tap.Frame {
	m := &tap.HTTPMeta{Method: "POST", URL: "/agent-hooks", Header: jsonHeader, Upstream: "https://policy.example.com/agent-hooks", AuthorizationCount: 1}
	if mod != nil {
		mod(m)
	}
	return &tap.Frame{Dir: tap.FromHarness, Transport: tap.HTTP, Conn: "c1", Raw: []byte(body), HTTP: m}
}

// httpResp builds a backend 200 frame on conn c1.
func httpResp(body string, mod func(*tap.HTTPMeta)) *tap.Frame {
	m := &tap.HTTPMeta{Status: 200, Header: jsonHeader}
	if mod != nil {
		mod(m)
	}
	return &tap.Frame{Dir: tap.FromBackend, Transport: tap.HTTP, Conn: "c1", Raw: []byte(body), HTTP: m}
}

// runWithNote feeds frames, then a note, then more frames.
func runWithNote(rs []tap.Rule, before []*tap.Frame, n *tap.Note) []tap.Finding {
	e := tap.NewEngine(tap.Config{Partial: true}, rs)
	var out []tap.Finding
	for _, f := range before {
		out = append(out, e.Feed(f)...)
	}
	if n != nil {
		out = append(out, e.Note(*n)...)
	}
	return append(out, e.Finish()...)
}

func statusNote(status int, body int64, hdr map[string][]string) *tap.Note {
	return &tap.Note{Kind: tap.NoteHTTPResponse, Conn: "c1", HTTP: &tap.HTTPMeta{Status: status, BodySize: body, Header: hdr}}
}

func TestHTTPMessage(t *testing.T) {
	tests := []struct {
		name   string
		frames []*tap.Frame
		want   int
	}{
		{"post json ok", []*tap.Frame{httpReq(httpIntercept, nil), httpResp(httpResult, nil)}, 0},
		{"charset param ok", []*tap.Frame{httpReq(httpIntercept, func(m *tap.HTTPMeta) {
			m.Header = map[string][]string{"Content-Type": {"application/json; charset=utf-8"}}
		})}, 0},
		{"GET", []*tap.Frame{httpReq(httpIntercept, func(m *tap.HTTPMeta) { m.Method = "GET" })}, 1},
		{"text/plain request", []*tap.Frame{httpReq(httpIntercept, func(m *tap.HTTPMeta) {
			m.Header = map[string][]string{"Content-Type": {"text/plain"}}
		})}, 1},
		{"no content type", []*tap.Frame{httpReq(httpIntercept, func(m *tap.HTTPMeta) { m.Header = nil })}, 1},
		{"empty body is BASE-1's", []*tap.Frame{httpReq("", nil)}, 0},
		{"response text/html", []*tap.Frame{httpReq(httpIntercept, nil), httpResp(httpResult, func(m *tap.HTTPMeta) {
			m.Header = map[string][]string{"Content-Type": {"text/html"}}
		})}, 1},
		{"stdio frame ignored", []*tap.Frame{harnessFrame(httpIntercept)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Partial: true}, httpRules(), tt.frames...)
			wantFindings(t, fs, "HTTP-1", tt.want)
		})
	}
}

func TestHTTPStatus(t *testing.T) {
	challenge := map[string][]string{"Www-Authenticate": {`Bearer resource_metadata="https://x/.well-known"`}}
	tests := []struct {
		name    string
		frames  []*tap.Frame
		note    *tap.Note
		want    int
		wantLvl tap.Level
	}{
		{"intercept 200 ok", []*tap.Frame{httpReq(httpIntercept, nil), httpResp(httpResult, nil)}, nil, 0, 0},
		{"observe 202 ok", []*tap.Frame{httpReq(httpObserve, nil)}, statusNote(202, 0, nil), 0, 0},
		{"observe 204 ok", []*tap.Frame{httpReq(httpObserve, nil)}, statusNote(204, 0, nil), 0, 0},
		{"observe 202 with body", []*tap.Frame{httpReq(httpObserve, nil)}, statusNote(202, 5, nil), 1, tap.Error},
		{"observe 200 with body", []*tap.Frame{httpReq(httpObserve, nil), httpResp(`{}`, nil)}, nil, 1, tap.Error},
		{"observe 200 empty", []*tap.Frame{httpReq(httpObserve, nil)}, statusNote(200, 0, nil), 1, tap.Error},
		{"intercept 500", []*tap.Frame{httpReq(httpIntercept, nil)}, statusNote(500, 10, nil), 1, tap.Error},
		{"intercept 200 empty", []*tap.Frame{httpReq(httpIntercept, nil)}, statusNote(200, 0, nil), 1, tap.Error},
		{"intercept 204", []*tap.Frame{httpReq(httpIntercept, nil)}, statusNote(204, 0, nil), 1, tap.Error},
		{"redirect", []*tap.Frame{httpReq(httpIntercept, nil)}, statusNote(307, 0, map[string][]string{"Location": {"https://elsewhere/"}}), 1, tap.Error},
		{"401 challenge is info", []*tap.Frame{httpReq(httpIntercept, nil)}, statusNote(401, 0, challenge), 1, tap.Info},
		{"401 without challenge", []*tap.Frame{httpReq(httpIntercept, nil)}, statusNote(401, 0, nil), 1, tap.Error},
		{"upstream failure", []*tap.Frame{httpReq(httpIntercept, nil)}, &tap.Note{Kind: tap.NoteUpstreamFailure, Conn: "c1", Detail: "the upstream refused the connection", HTTP: &tap.HTTPMeta{Status: 502}}, 1, tap.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := withCheck(runWithNote(httpRules(), tt.frames, tt.note), "HTTP-2")
			if len(fs) != tt.want {
				t.Fatalf("HTTP-2 findings = %d, want %d:%s", len(fs), tt.want, dump(fs))
			}
			if tt.want > 0 && fs[0].Level != tt.wantLvl {
				t.Errorf("level = %v, want %v", fs[0].Level, tt.wantLvl)
			}
		})
	}
}

func TestHTTPTLS(t *testing.T) {
	up := func(u string) func(*tap.HTTPMeta) { return func(m *tap.HTTPMeta) { m.Upstream = u } }
	tests := []struct {
		name   string
		frames []*tap.Frame
		want   int
	}{
		{"https remote ok", []*tap.Frame{httpReq(httpIntercept, up("https://policy.example.com/x"))}, 0},
		{"http loopback ok", []*tap.Frame{httpReq(httpIntercept, up("http://127.0.0.1:9000/x"))}, 0},
		{"http localhost ok", []*tap.Frame{httpReq(httpIntercept, up("http://localhost:9000/x"))}, 0},
		{"http ipv6 loopback ok", []*tap.Frame{httpReq(httpIntercept, up("http://[::1]:9000/x"))}, 0},
		{"http remote", []*tap.Frame{httpReq(httpIntercept, up("http://policy.example.com/x"))}, 1},
		{"reported once per host", []*tap.Frame{
			httpReq(httpIntercept, up("http://10.0.0.5/x")), httpReq(httpObserve, up("http://10.0.0.5/x")),
		}, 1},
		// The rule skips an upstream it saw last without a finding: the
		// next one is still judged.
		{"loopback, then remote", []*tap.Frame{
			httpReq(httpIntercept, up("http://127.0.0.1:9000/x")), httpReq(httpObserve, up("http://127.0.0.1:9000/x")),
			httpReq(httpObserve, up("http://10.0.0.5/x")),
		}, 1},
		{"two remote hosts, alternating", []*tap.Frame{
			httpReq(httpIntercept, up("http://10.0.0.5/x")), httpReq(httpObserve, up("http://10.0.0.6/x")),
			httpReq(httpObserve, up("http://10.0.0.5/x")), httpReq(httpObserve, up("http://10.0.0.6/y")),
			httpReq(httpObserve, up("https://10.0.0.7/x")), httpReq(httpObserve, up("http://10.0.0.7/x")),
		}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Partial: true}, httpRules(), tt.frames...)
			wantFindings(t, fs, "HTTP-3", tt.want)
		})
	}
}

func TestAuth(t *testing.T) {
	red := tap.RedactedCredential
	leak := func(n int) func(*tap.HTTPMeta) { return func(m *tap.HTTPMeta) { m.CredentialInBody = n } }
	tests := []struct {
		name    string
		frames  []*tap.Frame
		note    *tap.Note
		want    int
		wantPtr string
	}{
		{"one header ok", []*tap.Frame{httpReq(httpIntercept, nil)}, nil, 0, ""},
		{"two headers", []*tap.Frame{httpReq(httpIntercept, func(m *tap.HTTPMeta) { m.AuthorizationCount = 2 })}, nil, 1, ""},
		{"deny reason leak", []*tap.Frame{httpReq(httpIntercept, nil), httpResp(`{"jsonrpc":"2.0","id":"e1","result":{"effects":[{"type":"deny","reason":"token `+red+` bad"}]}}`, leak(1))}, nil, 1, "/result/effects/0/reason"},
		{"error data leak", []*tap.Frame{httpReq(httpIntercept, nil), httpResp(`{"jsonrpc":"2.0","id":"e1","error":{"code":1,"message":"m","data":{"t":"`+red+`"}}}`, leak(1))}, nil, 1, "/error/data/t"},
		{"request body leak", []*tap.Frame{httpReq(`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"x":"`+red+`"}}`, leak(1))}, nil, 1, "/params/x"},
		{"non-json body leak", []*tap.Frame{httpReq(`oops `+red, leak(1))}, nil, 1, ""},
		{"error page leak", []*tap.Frame{httpReq(httpIntercept, nil)}, &tap.Note{Kind: tap.NoteHTTPResponse, Conn: "c1", HTTP: &tap.HTTPMeta{Status: 500, BodySize: 40, CredentialInBody: 1}}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := withCheck(runWithNote(httpRules(), tt.frames, tt.note), "AUTH-1")
			if len(fs) != tt.want {
				t.Fatalf("AUTH-1 findings = %d, want %d:%s", len(fs), tt.want, dump(fs))
			}
			if tt.want > 0 && fs[0].Pointer != tt.wantPtr {
				t.Errorf("pointer = %q, want %q", fs[0].Pointer, tt.wantPtr)
			}
		})
	}
}

// An empty POST body is one fault: BASE-1 reports it, HTTP-1 does not repeat it.
func TestHTTPEmptyBodyIsOneFinding(t *testing.T) {
	fs := runRules(tap.Config{Partial: true}, Default(Options{}), httpReq("", nil))
	wantFindings(t, fs, "BASE-1", 1)
	wantFindings(t, fs, "HTTP-1", 0)
}

// A GET with no body (the interop adapter's GET /capabilities) is one
// HTTP-1 finding, not HTTP-1 plus a BASE-1 "not JSON" about a body nobody
// sent; a POST with an empty body is BASE-1's alone.
func TestHTTPBodilessGetIsOneFinding(t *testing.T) {
	noContentType := func(m *tap.HTTPMeta) { m.Method, m.URL, m.Header = "GET", "/capabilities", nil }
	all := append(envelopeRules(), httpRules()...)
	fs := runRules(tap.Config{Transport: tap.HTTP}, all, httpReq("", noContentType))
	if len(fs) != 1 || fs[0].Check != "HTTP-1" || !strings.Contains(fs[0].Message, "GET with no body") {
		t.Errorf("GET without body: %s; want one HTTP-1", dump(fs))
	}
	fs = runRules(tap.Config{Transport: tap.HTTP}, all, httpReq("", nil))
	if len(fs) != 1 || fs[0].Check != "BASE-1" {
		t.Errorf("POST with an empty body: %s; want one BASE-1", dump(fs))
	}
}

// TestIsJSONMediaType: the shortcut for the exact "application/json" says
// what the media-type parser says, for it and for its near misses.
func TestIsJSONMediaType(t *testing.T) {
	for _, v := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "application/json ",
		" application/json", "application/jsonx", "application/json;", "application/json-seq", "text/json", "application/", "",
		"application/json; charset", "application/json, text/plain"} {
		mt, _, err := mime.ParseMediaType(v)
		if got, want := isJSONMediaType(v), err == nil && mt == "application/json"; got != want {
			t.Errorf("isJSONMediaType(%q) = %v, want %v", v, got, want)
		}
	}
}
