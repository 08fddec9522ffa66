package httpaudit

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// secretWords make a name secret-like wherever they appear in it, once
// the name is lower-cased and stripped of "-", "_", "." and spaces
// ("client_secret", "refreshToken", "X-Api-Key", "privateKey").
var secretWords = []string{
	"secret", "password", "passwd", "passphrase", "token", "apikey", "accesskey",
	"privatekey", "credential", "authorization", "cookie", "signature", "bearer",
	"sessionid", "sessionkey", "signingkey", "encryptionkey",
}

// secretNames are secret-like as whole (normalised) names only: as parts
// of a name they are too common ("keyboard", "author", "passive").
var secretNames = map[string]bool{
	"pwd": true, "pass": true, "auth": true, "key": true, "sig": true, "pat": true,
	"code": true, "value": true, "xamzsignature": true, "xamzcredential": true,
}

// referenceSuffixes make a name that is otherwise secret-like name a
// reference to a secret, or a fact about one, not the secret itself
// ("tokenEnv", "tokenRef", "clientSecretRef", "passwordFile", "tokenType",
// "tokenUrl", "tokenExpiresIn").
var referenceSuffixes = []string{
	"env", "ref", "file", "path", "type", "url", "uri", "endpoint", "count",
	"expiry", "expires", "expiresin", "expiresat", "ttl", "name", "length", "ms",
}

func normaliseName(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(name))
}

// SecretName reports whether name (a JSON member, a query parameter, a
// header, an environment variable, a flag) names a secret value: its
// value must never be written where a credential must not be. The rule is
// broad on purpose: hiding a value that was not a secret costs a detail in
// a capture; writing one that was costs the secret.
func SecretName(name string) bool {
	n := normaliseName(strings.TrimLeft(name, "-"))
	if n == "" {
		return false
	}
	if secretNames[n] {
		return true
	}
	for _, s := range referenceSuffixes {
		if strings.HasSuffix(n, s) && n != s {
			return false
		}
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// secretParam reports whether a query parameter's value is a secret by its
// name alone: one of DefaultRedactParams, or a secret-like name.
func secretParamName(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	ln := strings.ToLower(name)
	for _, p := range DefaultRedactParams {
		if ln == p {
			return true
		}
	}
	return SecretName(name)
}

// redactQueryWith replaces the values of the parameters secret says are
// secrets by marker, keeping the rest of q byte for byte.
func redactQueryWith(q, marker string, secret func(string) bool) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	changed := false
	for i, part := range parts {
		name, _, hasVal := strings.Cut(part, "=")
		if hasVal && secret(name) {
			parts[i], changed = name+"="+marker, true
		}
	}
	if !changed {
		return q
	}
	return strings.Join(parts, "&")
}

// renderURL renders u with query q and, when u has one, its whole userinfo
// (the user name can be the token: "https://TOKEN@host") replaced by
// tap.RedactedCredential: as it is (for reading), or percent-encoded so
// that the result is still a valid URL (escape).
func renderURL(u *url.URL, q string, escape bool) string {
	cp := *u
	cp.RawQuery = q
	if cp.User == nil {
		return cp.String()
	}
	if escape {
		cp.User = url.User(tap.RedactedCredential)
		return cp.String()
	}
	cp.User = nil
	s := cp.String()
	if i := strings.Index(s, "//"); i >= 0 {
		return s[:i+2] + tap.RedactedCredential + "@" + s[i+2:]
	}
	return s
}

// URL renders the URL s for a log, a diagnostic or a capture header with
// its userinfo and the values of secret-like query parameters (the
// defaults of the HTTP tap, and any secret-like name: "api_key", "token",
// "sig"…) replaced by tap.RedactedCredential, percent-encoded: the result
// is still a valid URL (a registration's url is checked on replay). Text
// that is not a URL with a host is returned as it is.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" && u.User == nil {
		return s
	}
	if u.User == nil && u.RawQuery == "" {
		return s
	}
	return renderURL(u, redactQueryWith(u.RawQuery, url.QueryEscape(tap.RedactedCredential), secretParamName), true)
}

// urlInText finds URLs with a scheme in free text.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\x60]+`)

// URLsIn returns s with every URL in it redacted as URL does: a Go error
// ("Post \"https://u:p@host/x?token=…\": dial tcp …") quotes the URL it
// failed on.
func URLsIn(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, URL)
}

// registrationReferences are the members of an authentication block that
// name or describe a credential without holding it (the registration
// schema's "authentication" definition): every other scalar member of the
// block is a literal credential.
var registrationReferences = map[string]bool{
	"type": true, "tokenenv": true, "tokenref": true, "clientsecretref": true,
	"resource": true, "issuer": true, "clientid": true, "flow": true, "scopes": true,
}

// headerSecrets are header names whose values are credentials whatever the
// rule for names says.
var headerSecrets = map[string]bool{"authorization": true, "proxyauthorization": true, "xapikey": true, "cookie": true, "setcookie": true}

// RedactDocument replaces, in place, the secrets a JSON document (a
// registration) may hold, by tap.RedactedCredential:
//
//   - every scalar member of an "authentication" block but the schema's
//     references (type, tokenEnv, tokenRef, clientSecretRef, resource,
//     issuer, clientId, flow, scopes): AHP-SEC-001 allows references
//     only, so anything else there is a literal credential;
//   - the scalar value of every member with a secret-like name
//     (SecretName: client_secret, refresh_token, privateKey,
//     credentials, Authorization, X-Api-Key, …); an object or array under
//     such a name is redacted member by member;
//   - in "headers"-like objects and {"name": …, "value": …} pairs, the
//     values of credential headers;
//   - in every string: the userinfo and secret query parameters of URLs,
//     "Bearer …"/"Basic …" credentials, and a command-line argument that
//     follows a secret-like flag ("--token X", "--api-key=X").
//
// It reports whether it replaced anything.
func RedactDocument(v *tap.Value) bool {
	return redactValue(v, false)
}

// redactValue redacts v; all says every scalar in it is a secret.
func redactValue(v *tap.Value, all bool) bool {
	if v == nil {
		return false
	}
	changed := false
	switch {
	case v.Is(tap.Object):
		nameSecret := false
		for _, m := range v.Obj {
			if strings.EqualFold(m.Key, "name") {
				if s, ok := m.Val.Text(); ok && (SecretName(s) || headerSecrets[normaliseName(s)]) {
					nameSecret = true
				}
			}
		}
		for i, m := range v.Obj {
			key := normaliseName(m.Key)
			secret := all || SecretName(m.Key) || headerSecrets[key] || (nameSecret && key == "value")
			if (key == "authentication" || key == "auth") && m.Val.Is(tap.Object) {
				changed = redactAuthentication(m.Val) || changed
				continue
			}
			if secret && !m.Val.Is(tap.Object) && !m.Val.Is(tap.Array) {
				if !isRedacted(m.Val) {
					v.Obj[i].Val = redactedScalar(m.Val)
					changed = true
				}
				continue
			}
			changed = redactValue(m.Val, secret) || changed
		}
	case v.Is(tap.Array):
		flagSecret := false
		for i, e := range v.Arr {
			if flagSecret && e.Is(tap.String) {
				v.Arr[i], changed = redactedScalar(e), true
				flagSecret = false
				continue
			}
			flagSecret = false
			if s, ok := e.Text(); ok && strings.HasPrefix(s, "-") && !strings.Contains(s, "=") && SecretName(s) {
				flagSecret = true
			}
			if all && !e.Is(tap.Object) && !e.Is(tap.Array) {
				if !isRedacted(e) {
					v.Arr[i], changed = redactedScalar(e), true
				}
				continue
			}
			changed = redactValue(e, all) || changed
		}
	case v.Is(tap.String):
		if s := redactText(v.Str); s != v.Str {
			*v = tap.Value{Kind: tap.String, Str: s}
			changed = true
		}
	}
	return changed
}

// redactAuthentication redacts an authentication block: every scalar but
// the schema's references; URLs in those redacted as URLs.
func redactAuthentication(v *tap.Value) bool {
	changed := false
	for i, m := range v.Obj {
		if registrationReferences[normaliseName(m.Key)] {
			changed = redactValue(m.Val, false) || changed
			continue
		}
		switch {
		case m.Val.Is(tap.Object): // {"bearer": {"tokenEnv": …}}: the same rule one level down
			changed = redactAuthentication(m.Val) || changed
			continue
		case m.Val.Is(tap.Array):
			changed = redactValue(m.Val, true) || changed
			continue
		}
		if !isRedacted(m.Val) {
			v.Obj[i].Val = redactedScalar(m.Val)
			changed = true
		}
	}
	return changed
}

func isRedacted(v *tap.Value) bool {
	s, ok := v.Text()
	return ok && s == tap.RedactedCredential || v.Is(tap.Null)
}

// redactedScalar is the marker standing for a secret scalar; an
// Authorization-like "Bearer X" keeps its scheme.
func redactedScalar(v *tap.Value) *tap.Value {
	if s, ok := v.Text(); ok {
		if scheme, _ := splitAuthorization(s); authSchemes[strings.ToLower(scheme)] {
			return &tap.Value{Kind: tap.String, Str: scheme + " " + tap.RedactedCredential}
		}
	}
	return &tap.Value{Kind: tap.String, Str: tap.RedactedCredential}
}

var authSchemes = map[string]bool{"bearer": true, "basic": true, "token": true, "digest": true}

// authInText finds "Bearer X" / "Basic X" credentials in free text: a
// credential is 8 or more token68 characters with a digit or a symbol in
// them, so that "Basic functionality" stays as it is.
var authInText = regexp.MustCompile(`\b(Bearer|Basic|bearer|basic|BEARER|BASIC)(\s+)([A-Za-z0-9\-._~+/]{8,}=*)`)

func redactAuthInText(s string) string {
	return authInText.ReplaceAllStringFunc(s, func(m string) string {
		sub := authInText.FindStringSubmatch(m)
		if strings.IndexFunc(sub[3], func(r rune) bool { return r < 'A' || r > 'z' || r > 'Z' && r < 'a' }) < 0 {
			return m // letters only: a word, not a credential
		}
		return sub[1] + sub[2] + tap.RedactedCredential
	})
}

// redactText redacts the secrets a string may carry by its form: URL
// parts, an Authorization credential, a "--secret-flag=value" argument.
func redactText(s string) string {
	out := URLsIn(s)
	out = redactAuthInText(out)
	if strings.HasPrefix(out, "-") {
		if name, _, ok := strings.Cut(out, "="); ok && SecretName(name) {
			out = name + "=" + tap.RedactedCredential
		}
	}
	return out
}
