package httpaudit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

const testToken = "tok/9f8e+7d6c_5b4a.39281706=="

// escapings are the ways a body may carry testToken.
func escapings(tok string) map[string]string {
	u := func(all bool) string { // \u00XX escapes: every byte, or only the slashes
		var b strings.Builder
		for _, c := range []byte(tok) {
			if all || c == '/' {
				fmt.Fprintf(&b, `\u%04X`, c)
			} else {
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	return map[string]string{
		"raw":                 tok,
		"php json_encode":     strings.ReplaceAll(tok, "/", `\/`),
		"every byte \\u00XX":  u(true),
		"lower-case \\u":      strings.ToLower(u(true)),
		"slash as \\u002F":    u(false),
		"percent-encoded":     url.QueryEscape(tok),
		"JSON in JSON string": strings.ReplaceAll(tok, "/", `\\\/`),
	}
}

func TestRedactEscapedCredential(t *testing.T) {
	var c Credentials
	c.Add(http.Header{"Authorization": {"Bearer " + testToken}})
	for name, enc := range escapings(testToken) {
		body := []byte(`{"jsonrpc":"2.0","id":"1","result":{"effects":[{"type":"deny","reason":"token ` + enc + ` rejected"}]}}`)
		got, n := c.Redact(body)
		if n != 1 {
			t.Errorf("%s: redact(%s) replaced %d, want 1", name, body, n)
		}
		v, _, err := tap.ParseJSON(got)
		if err != nil {
			t.Errorf("%s: redact(%s) = %s, no longer JSON: %v", name, body, got, err)
			continue
		}
		reason, _ := v.Path("result", "effects").Elems()[0].Get("reason").Text()
		if want := "token " + tap.RedactedCredential + " rejected"; reason != want {
			t.Errorf("%s: decoded reason = %q, want %q", name, reason, want)
		}
		if bytes.Contains(got, []byte(enc)) {
			t.Errorf("%s: redact(%s) = %s, still holds the credential", name, body, got)
		}
	}
	// Nothing to redact: the same slice back, untouched.
	body := []byte(`{"a":"tok\/9f8e+7d6c_5b4a.3928170X"}`)
	if got, n := c.Redact(body); n != 0 || &got[0] != &body[0] {
		t.Errorf("redact(%s) = %s, %d; want the input unchanged", body, got, n)
	}
}

func TestCredentialForms(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("alice:s3cr3t-passw0rd"))
	for _, tc := range []struct {
		name  string
		hdr   http.Header
		find  string
		shown string // the Authorization value as recorded
	}{
		{"tab", http.Header{"Authorization": {"Bearer\t" + testToken}}, testToken, "Bearer " + tap.RedactedCredential},
		{"spaces", http.Header{"Authorization": {"  Bearer   " + testToken + " "}}, testToken, "Bearer " + tap.RedactedCredential},
		{"no scheme", http.Header{"Authorization": {testToken}}, testToken, tap.RedactedCredential},
		{"basic password", http.Header{"Authorization": {"Basic " + basic}}, "s3cr3t-passw0rd", "Basic " + tap.RedactedCredential},
		{"x-api-key", http.Header{"X-Api-Key": {testToken}}, testToken, ""},
		{"proxy-authorization", http.Header{"Proxy-Authorization": {"Bearer " + testToken}}, testToken, ""},
	} {
		var c Credentials
		c.Add(tc.hdr)
		if got, n := c.Redact([]byte(`"` + tc.find + `"`)); n != 1 {
			t.Errorf("%s: redact = %s, %d; want the credential found", tc.name, got, n)
		}
		if tc.shown != "" {
			if got := c.MetaHeader(tc.hdr)["Authorization"][0]; got != tc.shown {
				t.Errorf("%s: recorded Authorization = %q, want %q", tc.name, got, tc.shown)
			}
		}
	}
	// Too short to search for in bodies.
	var c Credentials
	c.Add(http.Header{"Authorization": {"Bearer short"}})
	if _, n := c.Redact([]byte(`"short"`)); n != 0 {
		t.Errorf("a 5-byte credential was searched for in a body")
	}
}

// Every credential seen is remembered, not only the latest 16; past the
// cap the oldest is Forgotten and that is reported once.
func TestEveryCredentialRemembered(t *testing.T) {
	var c Credentials
	for i := range 1000 {
		c.Add(http.Header{"Authorization": {fmt.Sprintf("Bearer token-number-%04d", i)}})
	}
	if _, n := c.Redact([]byte(`{"old":"token-number-0000","new":"token-number-0999"}`)); n != 2 {
		t.Errorf("redact found %d of the first and last of 1000 tokens, want 2", n)
	}

	var small Credentials
	small.Configure(Redaction{}, 4)
	warned := 0
	small.Forgotten = func(max int) { warned++ }
	for i := range 6 {
		small.Add(http.Header{"Authorization": {fmt.Sprintf("Bearer token-number-%04d", i)}})
	}
	if warned != 1 {
		t.Errorf("Forgotten called %d times, want once", warned)
	}
	for i, want := range []int{0, 0, 1, 1, 1, 1} {
		if _, n := small.Redact([]byte(fmt.Sprintf("token-number-%04d", i))); n != want {
			t.Errorf("token %d found %d times, want %d (the cap keeps the 4 latest)", i, n, want)
		}
	}
}

func TestRedactedHeadersAndParams(t *testing.T) {
	h := http.Header{
		"Cookie":              {"session=abc; theme=dark"},
		"Set-Cookie":          {"session=abc; HttpOnly"},
		"X-Api-Key":           {"key-0123456789"},
		"Proxy-Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("u:proxy-password"))},
		"X-Custom-Secret":     {"custom-secret-value"},
		"Content-Type":        {"application/json"},
	}
	u, _ := url.Parse("http://h/p?access_token=qs-token-123456&x=1&API_KEY=k2-0123456789")
	var c Credentials
	c.Configure(Redaction{Headers: []string{"x-custom-secret"}}, 0)
	c.Add(h)
	c.AddURL(u)
	m := c.MetaHeader(h)
	for k, want := range map[string]string{
		"Cookie": tap.RedactedCredential, "Set-Cookie": tap.RedactedCredential, "X-Api-Key": tap.RedactedCredential,
		"Proxy-Authorization": "Basic " + tap.RedactedCredential, "X-Custom-Secret": tap.RedactedCredential,
		"Content-Type": "application/json",
	} {
		if got := m[k][0]; got != want {
			t.Errorf("recorded %s = %q, want %q", k, got, want)
		}
	}
	if got, want := c.RedactURL(u), "http://h/p?access_token="+tap.RedactedCredential+"&x=1&API_KEY="+tap.RedactedCredential; got != want {
		t.Errorf("redactURL = %q, want %q", got, want)
	}
	for _, secret := range []string{"key-0123456789", "proxy-password", "custom-secret-value", "qs-token-123456", "k2-0123456789"} {
		if _, n := c.Redact([]byte(`{"x":"` + secret + `"}`)); n != 1 {
			t.Errorf("%s in a body: found %d, want 1", secret, n)
		}
	}

	// --no-redact: recorded as they are, and not searched for in bodies;
	// the Authorization credential still is.
	var off Credentials
	off.Configure(Redaction{NoDefaults: true}, 0)
	h.Set("Authorization", "Bearer "+testToken)
	off.Add(h)
	off.AddURL(u)
	m = off.MetaHeader(h)
	if m["Cookie"][0] != "session=abc; theme=dark" || m["X-Api-Key"][0] != "key-0123456789" {
		t.Errorf("--no-redact recorded Cookie %q, X-Api-Key %q; want them as sent", m["Cookie"][0], m["X-Api-Key"][0])
	}
	if m["Authorization"][0] != "Bearer "+tap.RedactedCredential {
		t.Errorf("--no-redact recorded Authorization %q; want it redacted", m["Authorization"][0])
	}
	if got := off.RedactURL(u); got != u.String() {
		t.Errorf("--no-redact redactURL = %q, want %q", got, u.String())
	}
	if _, n := off.Redact([]byte(testToken)); n != 1 {
		t.Errorf("--no-redact: the Authorization credential is not found in a body")
	}
}

// The search costs a bounded number of hash lookups per byte whatever the
// number of credentials: a body with no credential is never changed, and a
// body made only of near misses (every 8-byte window is a credential's
// anchor) still finds nothing.
func TestScanNearMisses(t *testing.T) {
	var c Credentials
	c.Add(http.Header{"Authorization": {"Bearer aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"}})
	body := bytes.Repeat([]byte("a"), 1<<16)
	if got, n := c.Redact(body); n != 0 || !bytes.Equal(got, body) {
		t.Errorf("redact of near misses replaced %d", n)
	}
	body = append(body, 'b')
	if got, n := c.Redact(body); n != 1 || !bytes.HasSuffix(got, []byte(tap.RedactedCredential)) {
		t.Errorf("redact found %d, want the credential at the end", n)
	}
}

// BenchmarkRedact measures the search of a 1 MiB JSON body holding no
// credential, with 1 and with 100,000 credentials remembered, and of a
// body full of escapes (the decoded view is built).
func BenchmarkRedact(b *testing.B) {
	plain := bytes.Repeat([]byte(`{"k":"some ordinary text of a tool input","n":12345},`), 1<<20/52)
	escaped := bytes.Repeat([]byte(`{"k":"a\/b\/c \u00e9\n\"quoted\" 100%25 text","n":12345},`), 1<<20/58)
	for _, tc := range []struct {
		name  string
		creds int
		body  []byte
	}{{"1cred", 1, plain}, {"100kcreds", 100_000, plain}, {"1cred-escaped", 1, escaped}} {
		var c Credentials
		for i := range tc.creds {
			c.remember(fmt.Sprintf("credential-%08d-xyz", i))
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			for b.Loop() {
				if _, n := c.Redact(tc.body); n != 0 {
					b.Fatal("found a credential")
				}
			}
		})
	}
}

// A credential found as written but starting or ending inside a JSON escape
// is replaced with the whole escape: the body stays JSON. (Found while
// writing FuzzRedact's properties.)
func TestRedactKeepsJSON(t *testing.T) {
	for _, tc := range []struct{ cred, body string }{
		{"u0041bcdefgh", `{"a":"\u0041bcdefgh"}`},
		{"nabcdefgh", `{"a":"x\nabcdefgh"}`},
		{"nabcdefgh", `{"a":"x\\\nabcdefgh"}`},
		{`abcdefg\`, `{"a":"abcdefg\"x"}`},
		{`abcdefg\`, `{"a":"abcdefg\u0041"}`},
		{"abcdefgh", `{"a":"\\abcdefgh"}`}, // an escaped backslash, then the credential
	} {
		var c Credentials
		c.remember(tc.cred)
		out, n := c.Redact([]byte(tc.body))
		if n != 1 || !json.Valid(out) || !bytes.Contains(out, []byte(tap.RedactedCredential)) {
			t.Errorf("redact(%s) with %q = %s, %d; want one replacement and JSON", tc.body, tc.cred, out, n)
		}
	}
	// The escaped backslash is kept: only the credential goes.
	var c Credentials
	c.remember("abcdefgh")
	if out, _ := c.Redact([]byte(`{"a":"\\abcdefgh"}`)); string(out) != `{"a":"\\`+tap.RedactedCredential+`"}` {
		t.Errorf("redact = %s, want the escaped backslash kept", out)
	}
}

// A credential outside a JSON string (a numeric key sent as a number) takes
// its whole value: replaced by the marker as a JSON string, the body stays
// JSON. (Found by FuzzRedact: testdata/fuzz/FuzzRedact.)
func TestRedactNumericCredential(t *testing.T) {
	var c Credentials
	c.Add(http.Header{"X-Api-Key": {"12345678901"}})
	for body, want := range map[string]string{
		`{"n":12345678901,"s":"x"}`:      `{"n":"` + tap.RedactedCredential + `","s":"x"}`,
		`{"n":-0.12345678901e5,"s":"x"}`: `{"n":"` + tap.RedactedCredential + `","s":"x"}`,
		`{"s":"a 12345678901 b"}`:        `{"s":"a ` + tap.RedactedCredential + ` b"}`,
	} {
		if got, n := c.Redact([]byte(body)); string(got) != want || n != 1 {
			t.Errorf("redact(%s) = %s, %d; want %s, 1", body, got, n, want)
		}
	}
}
