package httpproxy

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// TestAuditHeaderAsBuiltFresh: the relay's audit header of a head seen
// last time is the memo's, and its envelope is byte for byte (as a
// capture writes it) the one built fresh from the head, as before the
// memo; a credential learnt in between voids the memo, so a value that
// became a credential is redacted from the next envelope of the same head.
func TestAuditHeaderAsBuiltFresh(t *testing.T) {
	const later = "trace-secret-0123456789"
	aud := tap.NewSession(tap.SessionConfig{}).Audit(tap.AuditorConfig{})
	defer aud.Close()
	p, err := New(Config{Upstream: mustURL(t, "http://127.0.0.1:9821"), Auditor: aud})
	if err != nil {
		t.Fatal(err)
	}
	req := "POST /agent-hooks HTTP/1.1\r\nHost: tap\r\nAuthorization: Bearer bench-token-0123456789\r\nX-Trace: " + later +
		"\r\nCookie: a=b\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
	other := strings.Replace(req, "X-Trace", "X-Other", 1)
	resp := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Echo: " + later + "\r\nContent-Length: 2\r\n\r\n"
	fresh := func(hh heldHead, request bool) []byte {
		h := hh.header()
		var m *tap.HTTPMeta
		if request {
			m = p.creds.RequestMeta("POST", "/agent-hooks", h, "http://up")
		} else {
			m = p.creds.ResponseMeta(200, h, "http://up", 0)
		}
		b, _ := json.Marshal(m)
		return b
	}
	memo := func(hh heldHead, request bool) ([]byte, http.Header) {
		var m *tap.HTTPMeta
		if request {
			m = p.creds.RequestMetaRedacted("POST", "/agent-hooks", p.auditHeader(hh, &p.lastReqHead), "http://up")
		} else {
			m = p.creds.ResponseMetaRedacted(200, p.auditHeader(hh, &p.lastRespHead), "http://up", 0)
		}
		b, _ := json.Marshal(m)
		return b, m.Header
	}
	prev := map[bool]http.Header{} // the last header returned, for requests and for responses
	for i, step := range []struct {
		head    string
		request bool
		learn   bool // learn the trace value as a credential first
		reused  bool // the memo's header is the one returned
		secret  bool // the trace value is still in the envelope
	}{
		{req, true, false, false, true},
		{req, true, false, true, true},
		{resp, false, false, false, true},
		{req, true, false, true, true},
		{other, true, false, false, true},
		{req, true, false, false, true},
		{req, true, true, false, false},
		{req, true, false, true, false},
		{resp, false, false, false, false},
		{resp, false, false, true, false},
	} {
		hh := parsedHead(t, step.head, step.request).hold()
		if i == 0 || step.head == other {
			hh.learn(&p.creds.Credentials) // as startExchange does
		}
		if step.learn {
			p.creds.AddField("X-Api-Key", later)
		}
		got, h := memo(hh, step.request)
		if want := fresh(hh, step.request); string(got) != string(want) {
			t.Errorf("step %d: envelope %s, want %s", i, got, want)
		}
		if same := prev[step.request] != nil && reflect.ValueOf(h).UnsafePointer() == reflect.ValueOf(prev[step.request]).UnsafePointer(); same != step.reused {
			t.Errorf("step %d: header reused = %v, want %v", i, same, step.reused)
		}
		if strings.Contains(string(got), later) != step.secret || strings.Contains(string(got), "bench-token") {
			t.Errorf("step %d: envelope %s: trace value shown = %v, want %v; the bearer token never", i, got, strings.Contains(string(got), later), step.secret)
		}
		prev[step.request] = h
	}
}
