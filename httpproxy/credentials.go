package httpproxy

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ahp-tap/ahp-tap/tap"
)

// MinCredentialLen is the shortest credential ahp-tap looks for in bodies.
// A shorter one would match ordinary text; it is still redacted from the
// Authorization header.
const MinCredentialLen = 8

// maxCredentials bounds how many distinct credentials are remembered.
const maxCredentials = 16

// credentials is the in-memory set of credentials seen in Authorization
// headers, most recent first. It exists so that the audit copy of every body,
// header and URL can be searched for them and have them replaced before
// anything is checked, logged or captured (AHP-AUTH-001). It is never
// written anywhere.
type credentials struct {
	mu   sync.Mutex               // serialises add
	list atomic.Pointer[[][]byte] // replaced on add, never mutated: readers need no lock
}

// add remembers the credentials in the Authorization values of h.
func (c *credentials) add(h http.Header) {
	for _, v := range h.Values("Authorization") {
		cred := credentialOf(v)
		if len(cred) < MinCredentialLen || c.known(cred) {
			continue
		}
		c.mu.Lock()
		if !c.known(cred) {
			old := c.load()
			next := make([][]byte, 0, len(old)+1)
			next = append(next, []byte(cred))
			next = append(next, old...)
			if len(next) > maxCredentials {
				next = next[:maxCredentials]
			}
			c.list.Store(&next)
		}
		c.mu.Unlock()
	}
}

func (c *credentials) load() [][]byte {
	if p := c.list.Load(); p != nil {
		return *p
	}
	return nil
}

func (c *credentials) known(cred string) bool {
	for _, k := range c.load() {
		if string(k) == cred {
			return true
		}
	}
	return false
}

// redact returns b with every known credential replaced by
// tap.RedactedCredential, and how many replacements it made. b itself is
// returned when nothing matched.
func (c *credentials) redact(b []byte) ([]byte, int) {
	n := 0
	for _, k := range c.load() {
		if m := bytes.Count(b, k); m > 0 {
			n += m
			b = bytes.ReplaceAll(b, k, []byte(tap.RedactedCredential))
		}
	}
	return b, n
}

// redactString is redact for text (URLs, error messages).
func (c *credentials) redactString(s string) string {
	for _, k := range c.load() {
		s = strings.ReplaceAll(s, string(k), tap.RedactedCredential)
	}
	return s
}

// credentialOf returns the credential in an Authorization value: what
// follows the scheme ("Bearer abc" → "abc"), or the whole value when there is
// no scheme.
func credentialOf(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, ' '); i >= 0 {
		return strings.TrimSpace(v[i+1:])
	}
	return v
}

// metaHeader copies h for a tap.HTTPMeta: Authorization values keep only
// their scheme, and every known credential elsewhere is replaced.
func (c *credentials) metaHeader(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		cp := make([]string, len(vs))
		for i, v := range vs {
			if strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Proxy-Authorization") {
				scheme := strings.TrimSpace(v)
				if j := strings.IndexByte(scheme, ' '); j >= 0 {
					scheme = scheme[:j]
				} else {
					scheme = ""
				}
				cp[i] = strings.TrimSpace(scheme + " " + tap.RedactedCredential)
				continue
			}
			cp[i] = c.redactString(v)
		}
		out[k] = cp
	}
	return out
}
