package httpaudit

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestSecretName(t *testing.T) {
	for _, n := range []string{
		"client_secret", "clientSecret", "refresh_token", "refreshToken", "privateKey", "private-key",
		"credentials", "Authorization", "Proxy-Authorization", "X-Api-Key", "api_key", "apiKey", "token",
		"access_token", "password", "PASSWD", "pwd", "secret", "Cookie", "sig", "--token", "--api-key",
		"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "sessionId", "bearerToken", "value",
	} {
		if !SecretName(n) {
			t.Errorf("SecretName(%q) = false, want true", n)
		}
	}
	for _, n := range []string{
		"tokenEnv", "tokenRef", "clientSecretRef", "passwordFile", "tokenType", "tokenUrl",
		"id", "type", "url", "timeoutMs", "lifecycle", "command", "args", "subscriptions", "clientId",
		"issuer", "resource", "keyboard", "author", "name", "events", "--verbose", "",
	} {
		if SecretName(n) {
			t.Errorf("SecretName(%q) = true, want false", n)
		}
	}
}

func TestURL(t *testing.T) {
	m := url.QueryEscape(tap.RedactedCredential)
	u := "%5Bahp-tap%3A%20credential%20redacted%5D"
	for in, want := range map[string]string{
		"https://user:pass@collector:4318/v1/logs":                 "https://" + u + "@collector:4318/v1/logs",
		"https://TOKEN123@github.com/x":                            "https://" + u + "@github.com/x",
		"https://h/v1/logs?api_key=K1&x=1&token=T2":                "https://h/v1/logs?api_key=" + m + "&x=1&token=" + m,
		"https://h/p?client_secret=s&refreshToken=r&page=2":        "https://h/p?client_secret=" + m + "&refreshToken=" + m + "&page=2",
		"https://h/p?page=2":                                       "https://h/p?page=2",
		"https://h/p":                                              "https://h/p",
		"not a url":                                                "not a url",
		"http://127.0.0.1:8787/agent-hooks#ahp-tap-upstream=abc12": "http://127.0.0.1:8787/agent-hooks#ahp-tap-upstream=abc12",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
	in := `Post "https://u:p4ssw0rd@h/v1/logs?api_key=SECRETKEY1": dial tcp: refused`
	got := URLsIn(in)
	if strings.Contains(got, "p4ssw0rd") || strings.Contains(got, "SECRETKEY1") || !strings.Contains(got, "dial tcp: refused") {
		t.Errorf("URLsIn(%q) = %q", in, got)
	}
}

func TestRedactDocument(t *testing.T) {
	doc := `{"version":"draft","backends":[{"id":"com.example.p","transport":{"type":"http","url":"https://svc:pw-0123456789@policy.example.com/hooks?api_key=qk-0123456789&region=eu"},
	"authentication":{"type":"bearer","tokenEnv":"POLICY_TOKEN","token":"lit-bearer-0123456789"},
	"headers":{"Authorization":"Bearer hdr-0123456789","X-Api-Key":"xk-0123456789","Accept":"application/json"},
	"oauth":{"client_secret":"cs-0123456789","refresh_token":"rt-0123456789","clientId":"app-1"},
	"privateKey":"-----BEGIN KEY----- pk-0123456789","credentials":{"user":"u","pass":"cp-0123456789"},
	"headerList":[{"name":"Authorization","value":"Basic hl-0123456789"},{"name":"Accept","value":"text/plain"}],
	"env":{"GITHUB_TOKEN":"gh-0123456789","HOME":"/home/u"},
	"args":["--token","arg-0123456789","--api-key=ak-0123456789","--verbose"],
	"description":"Basic functionality: a bearer of news",
	"subscriptions":[{"kind":"intercept","events":["tool.before"],"timeoutMs":500}]}]}`
	v, _, err := tap.ParseJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !RedactDocument(v) {
		t.Fatal("RedactDocument changed nothing")
	}
	out := string(v.Canonical())
	for _, secret := range []string{"pw-0123456789", "svc", "qk-0123456789", "lit-bearer-0123456789", "hdr-0123456789",
		"xk-0123456789", "cs-0123456789", "rt-0123456789", "pk-0123456789", "cp-0123456789", "hl-0123456789",
		"gh-0123456789", "arg-0123456789", "ak-0123456789"} {
		if strings.Contains(out, secret) {
			t.Errorf("%s left in %s", secret, out)
		}
	}
	for _, kept := range []string{`"tokenEnv":"POLICY_TOKEN"`, `"clientId":"app-1"`, `"Accept":"application/json"`, `"timeoutMs":500`,
		"region=eu", `"HOME":"/home/u"`, `"--verbose"`, "Basic functionality: a bearer of news",
		`"Authorization":"Bearer ` + tap.RedactedCredential, `"events":["tool.before"]`, `"id":"com.example.p"`} {
		if !strings.Contains(out, kept) {
			t.Errorf("%s missing from %s", kept, out)
		}
	}
	// A registration without secrets is left as it is.
	clean, _, _ := tap.ParseJSON([]byte(`{"backends":[{"id":"a","transport":{"type":"stdio","command":"x","args":["--mode","y"],"lifecycle":"persistent"},"authentication":{"type":"bearer","tokenEnv":"T"}}]}`))
	before := string(clean.Canonical())
	if RedactDocument(clean) || string(clean.Canonical()) != before {
		t.Errorf("a registration without secrets changed: %s", clean.Canonical())
	}
}

// The builder is the one place an HTTP exchange becomes audit frames: the
// HTTP tap, HAR input and the mock peers get the same copy of the same
// exchange. A credential learned from one request (header, query, or
// userinfo) is redacted from later bodies in every escaped form, and
// counted (AUTH-1).
func TestBuilderRedactsAsTheTap(t *testing.T) {
	var b Builder
	target, _ := url.Parse("http://svc:userinfo-pass-01@h/hooks?access_token=query-token-01&x=1")
	h := http.Header{"Authorization": {"Bearer header-token-01"}, "X-Api-Key": {"api-key-value-01"}, "Content-Type": {"application/json"}}
	m := b.Request("POST", target, h, "https://up.example/hooks?api_key=up-key-01")
	if strings.Contains(m.URL, "query-token-01") || strings.Contains(m.URL, "userinfo-pass-01") || strings.Contains(m.URL, "svc") ||
		strings.Contains(m.Upstream, "up-key-01") || m.Header["X-Api-Key"][0] != tap.RedactedCredential ||
		m.Header["Authorization"][0] != "Bearer "+tap.RedactedCredential || m.AuthorizationCount != 1 {
		t.Errorf("request meta %+v", m)
	}
	// A secret-like parameter outside the defaults is hidden in the URL but
	// not searched for in bodies: an ordinary value would be AUTH-1
	// everywhere it appears. Nor is the user name.
	t2, _ := url.Parse("http://svc-user-name@h/hooks?tokenizer=cl100k_base")
	if m := b.Request("POST", t2, http.Header{}, ""); strings.Contains(m.URL, "cl100k_base") || strings.Contains(m.URL, "svc-user-name") {
		t.Errorf("URL %s", m.URL)
	}
	if f := b.Frame(tap.FromHarness, time.Now(), "c", Body{Bytes: []byte(`{"m":"cl100k_base svc-user-name"}`)}, &tap.HTTPMeta{}); f.HTTP.CredentialInBody != 0 {
		t.Errorf("an ordinary value counted as a credential: %s", f.Raw)
	}
	for _, secret := range []string{"header-token-01", "query-token-01", "api-key-value-01", "userinfo-pass-01"} {
		body := `{"jsonrpc":"2.0","id":1,"result":{"a":"` + secret + `","b":"` + strings.ReplaceAll(uEsc(secret), `\`, `\\`) + `","c":"` + url.QueryEscape(secret) + `"}}`
		f := b.Frame(tap.FromBackend, time.Now(), "c", Body{Bytes: []byte(body)}, &tap.HTTPMeta{})
		if strings.Contains(string(f.Raw), secret) || f.HTTP.CredentialInBody != 3 || f.HTTP.BodySize != int64(len(body)) {
			t.Errorf("%s: frame %s, %d found", secret, f.Raw, f.HTTP.CredentialInBody)
		}
		n := b.ResponseNote(time.Now(), "c", Body{Bytes: []byte("bad " + secret)}, &tap.HTTPMeta{Status: 401})
		if n.HTTP.CredentialInBody != 1 || n.Kind != tap.NoteHTTPResponse {
			t.Errorf("%s: note %+v", secret, n.HTTP)
		}
		if got := b.Text("failed: " + uEsc(secret)); strings.Contains(got, uEsc(secret)) {
			t.Errorf("Text left %s", got)
		}
	}
	// A conforming body: nothing replaced, nothing counted.
	clean := []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"draft"}}`)
	if f := b.Frame(tap.FromBackend, time.Now(), "c", Body{Bytes: clean}, &tap.HTTPMeta{}); string(f.Raw) != string(clean) || f.HTTP.CredentialInBody != 0 {
		t.Errorf("clean body became %s (%d)", f.Raw, f.HTTP.CredentialInBody)
	}
}

func uEsc(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		b.WriteString(`\u00`)
		b.WriteByte("0123456789abcdef"[c>>4])
		b.WriteByte("0123456789abcdef"[c&15])
	}
	return b.String()
}
