package httpaudit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// token68 are the bytes of a bearer token (RFC 6750 b64token).
const token68 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/="

// decodedForms returns b and its decoded views, as many levels as redact
// searches.
func decodedForms(b []byte) [][]byte {
	out := [][]byte{b}
	for range maxEscapeDepth {
		dec, _, ok := unescape(out[len(out)-1])
		if !ok {
			break
		}
		out = append(out, dec)
	}
	return out
}

// FuzzRedact: whatever the body and wherever a credential sits in it, as
// written or escaped, redaction leaves it in no form redact searches, keeps
// a JSON body JSON, and changes nothing when it finds nothing. Seeds: every
// upstream fixture (read at test time) with a token placed in each form.
func FuzzRedact(f *testing.F) {
	paths, _ := filepath.Glob("../../shared/ahp/fixtures/draft/*/*.json")
	for i, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data, "tok/9f8e+7d6c_5b4a.39281706==", uint16(len(data)/2), uint8(i))
		}
	}
	f.Add([]byte(`{"a":"x"}`), "abcdefgh", uint16(7), uint8(2))
	// A credential that begins inside an escape (TestRedactKeepsJSON).
	f.Add([]byte(`{"a":"x\nabcdefgh"}`), "nabcdefgh", uint16(0), uint8(5))
	f.Add([]byte(`{"a":"\u0041bcdefgh"}`), "u0041bcdefgh", uint16(0), uint8(5))
	f.Fuzz(func(t *testing.T, body []byte, cred string, at uint16, form uint8) {
		if len(cred) < MinCredentialLen || len(cred) > 256 || strings.Trim(cred, token68) != "" {
			return
		}
		var enc string
		switch form % 6 {
		case 0:
			enc = cred
		case 1:
			enc = strings.ReplaceAll(cred, "/", `\/`)
		case 2:
			var b strings.Builder
			for _, c := range []byte(cred) {
				fmt.Fprintf(&b, `\u%04x`, c)
			}
			enc = b.String()
		case 3:
			enc = url.QueryEscape(cred)
		case 4:
			enc = strings.ReplaceAll(cred, "/", `\\\/`)
		default:
			enc = "" // the body as it is
		}
		pos := min(int(at), len(body))
		in := append(append(append([]byte{}, body[:pos]...), enc...), body[pos:]...)
		var c Credentials
		c.remember(cred)
		out, n := c.Redact(in)
		for level, form := range decodedForms(out) {
			if bytes.Contains(form, []byte(cred)) {
				t.Fatalf("the credential %q is left in %q (decoding level %d) of %q", cred, out, level, in)
			}
		}
		if n == 0 && !bytes.Equal(out, in) {
			t.Fatalf("nothing found, yet %q became %q", in, out)
		}
		if json.Valid(in) && !json.Valid(out) {
			t.Fatalf("redacting %q broke JSON: %q", in, out)
		}
		if n > 0 && !bytes.Contains(out, []byte(tap.RedactedCredential)) {
			t.Fatalf("%d found but no marker in %q", n, out)
		}
	})
}
