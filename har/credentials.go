package har

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// minCredentialLen is the shortest credential searched for in bodies, as
// in the HTTP tap: a shorter one would match ordinary text.
const minCredentialLen = 8

// maxCredentials bounds how many distinct credentials are remembered.
const maxCredentials = 16

// credentials are the credentials seen in Authorization headers so far, so
// that the audit copy of every body, URL and header has them replaced
// before anything is checked or written (AHP-AUTH-001). They mirror the
// HTTP tap's (httpproxy/credentials.go): a HAR is audited as the tap would
// have audited the same exchange.
type credentials struct {
	list [][]byte // most recent first
}

func (c *credentials) add(h http.Header) {
	for _, v := range h.Values("Authorization") {
		cred := credentialOf(v)
		if len(cred) < minCredentialLen || c.known(cred) {
			continue
		}
		c.list = append([][]byte{[]byte(cred)}, c.list...)
		if len(c.list) > maxCredentials {
			c.list = c.list[:maxCredentials]
		}
	}
}

func (c *credentials) known(cred string) bool {
	for _, k := range c.list {
		if string(k) == cred {
			return true
		}
	}
	return false
}

// redact returns b with every known credential replaced, and how many
// replacements it made.
func (c *credentials) redact(b []byte) ([]byte, int) {
	n := 0
	for _, k := range c.list {
		if m := bytes.Count(b, k); m > 0 {
			n += m
			b = bytes.ReplaceAll(b, k, []byte(tap.RedactedCredential))
		}
	}
	return b, n
}

func (c *credentials) redactString(s string) string {
	for _, k := range c.list {
		s = strings.ReplaceAll(s, string(k), tap.RedactedCredential)
	}
	return s
}

// credentialOf is what follows the scheme in an Authorization value.
func credentialOf(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		return strings.TrimSpace(v[i+1:])
	}
	return v
}

// secretHeaders hold credentials in every value. Browser HARs record
// cookies in clear; they never reach an audit copy.
var secretHeaders = map[string]bool{"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Set-Cookie": true}

// metaHeader copies h for a tap.HTTPMeta: Authorization values keep only
// their scheme, cookies nothing, and every known credential elsewhere is
// replaced.
func (c *credentials) metaHeader(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		cp := make([]string, len(vs))
		for i, v := range vs {
			if !secretHeaders[k] {
				cp[i] = c.redactString(v)
				continue
			}
			scheme := ""
			if k == "Authorization" || k == "Proxy-Authorization" {
				if j := strings.IndexAny(strings.TrimSpace(v), " \t"); j >= 0 {
					scheme = strings.TrimSpace(v)[:j]
				}
			}
			cp[i] = strings.TrimSpace(scheme + " " + tap.RedactedCredential)
		}
		out[k] = cp
	}
	return out
}
