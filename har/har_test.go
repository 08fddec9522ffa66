package har

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// token is the made-up bearer token testdata/make.sh sent.
const token = "har-test-token-0123456789"

func TestSniff(t *testing.T) {
	for head, want := range map[string]bool{
		"{\n  \"log\": {\n    \"version\": \"1.2\"":              true,
		`{"log":{"version":"1.2","creator":{}}}`:                 true,
		"\xef\xbb\xbf{ \"log\" :\n{":                             true,
		`{"type":"header","format":"ahp-tap-capture"}`:           false,
		`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}`: false,
		`{"logs":{}}`:    false,
		`{"log":"text"}`: false,
		`[{"log":{}}]`:   false,
		``:               false,
	} {
		if got := Sniff([]byte(head)); got != want {
			t.Errorf("Sniff(%q) = %v, want %v", head, got, want)
		}
	}
}

// readAll returns every item of a HAR file and the reader's stats.
func readAll(t *testing.T, r io.Reader) ([]tap.Item, Stats) {
	t.Helper()
	hr, err := NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	var all []tap.Item
	for {
		items, err := hr.Next()
		if err == io.EOF {
			return all, hr.Stats()
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, items...)
	}
}

func readFile(t *testing.T, name string) ([]tap.Item, Stats) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return readAll(t, f)
}

// TestMitmproxyHAR reads the HAR mitmproxy's hardump addon wrote
// (testdata/make.sh): the 7 AHP exchanges become request frames and
// response frames or notes as the HTTP tap builds them; the GET and the form
// POST are counted and skipped; the bearer token appears nowhere.
func TestMitmproxyHAR(t *testing.T) {
	items, st := readFile(t, "testdata/mitmproxy.har")
	if st != (Stats{Entries: 9, Audited: 7, Skipped: 2}) {
		t.Errorf("stats %+v, want 9 entries, 7 audited, 2 skipped", st)
	}
	var frames, notes int
	for _, it := range items {
		var m *tap.HTTPMeta
		var raw []byte
		if it.Frame != nil {
			frames++
			f := it.Frame
			m, raw = f.HTTP, f.Raw
			if f.Transport != tap.HTTP || f.Time.IsZero() || f.Conn == "" {
				t.Errorf("frame %+v: want an HTTP frame with a time and a conn", f)
			}
			if f.Dir == tap.FromHarness && (m.Method != "POST" || !strings.HasSuffix(m.URL, "/agent-hooks") || m.AuthorizationCount != 1) {
				t.Errorf("request meta %+v: want POST .../agent-hooks with one Authorization header", m)
			}
			if f.Dir == tap.FromHarness && fmt.Sprint(m.Header["Authorization"]) != "[Bearer "+tap.RedactedCredential+"]" {
				t.Errorf("request Authorization header %q, want the scheme and the redaction mark", m.Header["Authorization"])
			}
			if f.Dir == tap.FromBackend && (m.Status != 200 || m.LatencyMs <= 0) {
				t.Errorf("response meta %+v: want status 200 and a latency", m)
			}
			if f.Dir == tap.FromBackend && bytes.Contains(raw, []byte(`"evt_6"`)) && m.CredentialInBody != 1 {
				t.Errorf("evt_6 response: CredentialInBody %d, want 1 (the backend echoed the token)", m.CredentialInBody)
			}
		} else {
			notes++
			n := it.Note
			m = n.HTTP
			if n.Kind != tap.NoteHTTPResponse || m.Status != 202 || m.BodySize != 0 {
				t.Errorf("note %+v: want the observe's 202 without a body", n)
			}
		}
		dump, _ := json.Marshal(m)
		if bytes.Contains(raw, []byte(token)) || bytes.Contains(dump, []byte(token)) {
			t.Errorf("the bearer token reached the audit copy: %s %s", raw, dump)
		}
	}
	if frames != 13 || notes != 1 {
		t.Errorf("%d frames and %d notes, want 13 (7 requests, 6 answers) and 1 (the observe's 202)", frames, notes)
	}
}

// TestBase64BodiesReadTheSame: the same HAR with every body base64-encoded
// gives the same frames and notes.
func TestBase64BodiesReadTheSame(t *testing.T) {
	plain, _ := readFile(t, "testdata/mitmproxy.har")
	b64, st := readFile(t, "testdata/mitmproxy-base64.har")
	if st.Audited != 7 || len(b64) != len(plain) {
		t.Fatalf("base64 HAR: %+v, %d items; want 7 audited and %d items", st, len(b64), len(plain))
	}
	for i := range plain {
		if !reflect.DeepEqual(plain[i], b64[i]) {
			t.Errorf("item %d differs:\nplain  %+v\nbase64 %+v", i, plain[i], b64[i])
		}
	}
}

// entryJSON is one HAR entry POSTing body to url and answered with status
// and answer after ms milliseconds.
func entryJSON(url, body string, status int, answer string, ms float64) string {
	e := map[string]any{
		"startedDateTime": "2026-12-02T10:00:00.000Z", "time": ms,
		"request": map[string]any{"method": "POST", "url": url, "httpVersion": "HTTP/1.1",
			"headers":  []any{map[string]any{"name": "content-type", "value": "application/json"}},
			"postData": map[string]any{"mimeType": "application/json", "text": body}},
		"response": map[string]any{"status": status, "statusText": "", "httpVersion": "HTTP/1.1",
			"headers": []any{map[string]any{"name": "Content-Type", "value": "application/json"}},
			"content": map[string]any{"size": len(answer), "mimeType": "application/json", "text": answer}},
		"timings": map[string]any{"send": 0, "wait": ms, "receive": 0},
	}
	b, _ := json.Marshal(e)
	return string(b)
}

func harOf(entries ...string) string {
	return `{"log":{"version":"1.2","creator":{"name":"test","version":"1"},"entries":[` + strings.Join(entries, ",") + `]}}`
}

// audit runs the default rules over a HAR as replay does.
func audit(t *testing.T, doc string, cfg tap.Config) []tap.Finding {
	t.Helper()
	items, _ := readAll(t, strings.NewReader(doc))
	cfg.Transport = tap.HTTP
	e := tap.NewEngine(cfg, rules.Default(rules.Options{}))
	var out []tap.Finding
	for _, it := range items {
		if it.Frame != nil {
			out = append(out, e.Feed(it.Frame)...)
		} else {
			out = append(out, e.Note(*it.Note)...)
		}
	}
	return append(out, e.Finish()...)
}

func checks(fds []tap.Finding) map[string]int {
	out := map[string]int{}
	for _, f := range fds {
		out[f.Check]++
	}
	return out
}

const (
	intercept = `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","type":"tool.before"},"capabilities":{"effects":["deny"]}}}`
	noEffect  = `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`
)

// TestTimingDrivesDeadlines: the entry's timings place the response, so a
// late answer is CORR-3 and a prompt one is not.
func TestTimingDrivesDeadlines(t *testing.T) {
	cfg := tap.Config{Timeout: time.Second}
	late := audit(t, harOf(entryJSON("http://127.0.0.1:1/h", intercept, 200, noEffect, 3000)), cfg)
	if checks(late)["CORR-3"] != 1 {
		t.Errorf("a response 3 s after the request, deadline 1 s: findings %v, want one CORR-3", checks(late))
	}
	prompt := audit(t, harOf(entryJSON("http://127.0.0.1:1/h", intercept, 200, noEffect, 10)), cfg)
	if checks(prompt)["CORR-3"] != 0 {
		t.Errorf("a response 10 ms after the request: findings %v, want no CORR-3", checks(prompt))
	}
}

// TestWhichEntriesAreAHP: other JSON-RPC, GETs and forms are skipped and
// make no finding; a malformed body posted to an AHP endpoint is audited.
func TestWhichEntriesAreAHP(t *testing.T) {
	doc := harOf(
		entryJSON("https://rpc.example/eth", `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[]}`, 200, `{"jsonrpc":"2.0","id":1,"result":"0x"}`, 5),
		entryJSON("https://www.example/login", `user=a`, 200, `<html>`, 5),
		entryJSON("http://127.0.0.1:1/h", intercept, 200, noEffect, 5),
		entryJSON("http://127.0.0.1:1/h#frag", `{not json`, 400, ``, 5),
	)
	items, st := readAll(t, strings.NewReader(doc))
	if st != (Stats{Entries: 4, Audited: 2, Skipped: 2}) || len(items) != 4 {
		t.Errorf("stats %+v, %d items; want 2 audited (the intercept and the bad body to its endpoint), 2 skipped", st, len(items))
	}
	fds := checks(audit(t, doc, tap.Config{}))
	if fds["BASE-1"] == 0 {
		t.Errorf("the malformed body posted to the AHP endpoint: findings %v, want BASE-1", fds)
	}
	for _, f := range audit(t, harOf(entryJSON("https://rpc.example/eth", `{"jsonrpc":"2.0","id":1,"method":"eth_call"}`, 200, `{}`, 5)), tap.Config{}) {
		t.Errorf("a non-AHP entry made a finding: %v", f)
	}
}

// TestNoResponseIsAnAbandonedRequest: status 0 (a browser's request that
// got no answer) is the harness giving up, not a backend fault.
func TestNoResponseIsAnAbandonedRequest(t *testing.T) {
	items, _ := readAll(t, strings.NewReader(harOf(entryJSON("http://127.0.0.1:1/h", intercept, 0, "", 5))))
	if len(items) != 2 || items[1].Note == nil || items[1].Note.Kind != tap.NoteHarnessGone {
		t.Fatalf("items %+v, want the request and a harness_gone note", items)
	}
	fds := audit(t, harOf(entryJSON("http://127.0.0.1:1/h", intercept, 0, "", 5)), tap.Config{})
	for _, f := range fds {
		if (f.Check == "CORR-2" || f.Check == "HTTP-2") && f.Level != tap.Info {
			t.Errorf("an unanswered HAR entry was blamed on the backend: %v", f)
		}
	}
}

func TestNotAHAR(t *testing.T) {
	for _, doc := range []string{`{"log":{"entries":{}}}`, `{"log":{}}`, `{"log":[]}`, `[]`, `{"log":{"entries":[{"request":5}]}}`} {
		hr, err := NewReader(strings.NewReader(doc))
		if err == nil {
			_, err = hr.Next()
		}
		if err == nil || err == io.EOF {
			t.Errorf("%s: no error", doc)
		}
	}
}

// Issue 20 item 5: a HAR is audited as the HTTP tap audits the same
// exchange (one builder, httpaudit): a credential query parameter and an
// X-Api-Key header are redacted from the envelope, and found in a body,
// escaped or not, as AUTH-1. The HAR reader used to redact the
// Authorization credential only, as written.
func TestHARRedactsAsTheTap(t *testing.T) {
	const (
		queryTok = "har-query-token-0123456789"
		apiKey   = "har-api-key-0123456789"
	)
	var esc strings.Builder
	for _, c := range []byte(apiKey) {
		fmt.Fprintf(&esc, `\\u%04x`, c)
	}
	e := entryJSON("https://policy.example/h?access_token="+queryTok, `{"jsonrpc":"2.0","id":"1","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`,
		200, `{"jsonrpc":"2.0","id":"1","result":{"protocolVersion":"draft","note":"`+esc.String()+` `+queryTok+`"}}`, 5)
	e = strings.Replace(e, `"headers":[{"name":"content-type"`, `"headers":[{"name":"x-api-key","value":"`+apiKey+`"},{"name":"content-type"`, 1)
	items, _ := readAll(t, strings.NewReader(harOf(e)))
	all, _ := json.Marshal(items)
	for _, secret := range []string{queryTok, apiKey} {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("%s reaches the audit copy: %s", secret, all)
		}
	}
	if len(items) != 2 || items[1].Frame == nil || items[1].Frame.HTTP.CredentialInBody != 2 {
		t.Fatalf("want the response frame with 2 credentials found: %s", all)
	}
	if got := checks(audit(t, harOf(e), tap.Config{})); got["AUTH-1"] == 0 {
		t.Errorf("no AUTH-1 for the credentials in the response: %v", got)
	}
}
