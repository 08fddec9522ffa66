package har

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/norace"
)

// The cutter keeps a long string as a prefix that is still valid JSON,
// whatever escape the cut falls in, and marks it cut; short strings pass
// unchanged.
func TestCutterKeepsValidJSON(t *testing.T) {
	t.Parallel()
	if norace.Run(t) {
		return
	}
	for _, unit := range []string{`\"`, `\u00e9`, `ab`, `\\`, `é`} {
		long := strings.Repeat(unit, maxString/len(unit)+7)
		doc := `{"log":{"entries":[{"short":"a\"b","long":"` + long + `","after":[1,"x"]}]}}`
		out, err := io.ReadAll(newCutter(strings.NewReader(doc)))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Log struct {
				Entries []struct {
					Short, Long string
					After       []any
				}
			}
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("unit %q: cut output is not JSON: %v", unit, err)
		}
		e := v.Log.Entries[0]
		text, cut := cutText(e.Long)
		if !cut || e.Short != `a"b` || len(e.After) != 2 {
			t.Errorf("unit %q: cut %v, short %q, after %v", unit, cut, e.Short, e.After)
		}
		if len(text) > maxString || len(text) < maxString/6 {
			t.Errorf("unit %q: kept %d bytes, want at most %d", unit, len(text), maxString)
		}
		if _, cut := cutText(e.Short); cut {
			t.Errorf("unit %q: short string marked cut", unit)
		}
	}
	// Under the bound: byte for byte.
	doc := `{"log":{"entries":[{"a":"\u00e9\"x","b":[true,null,1.5e3]}]}}`
	out, _ := io.ReadAll(newCutter(strings.NewReader(doc)))
	if string(out) != doc {
		t.Errorf("cutter changed a short document:\n%s\n%s", out, doc)
	}
}

// An entry larger than maxEntry once its strings are cut (a flood of small
// headers) is refused with one error, never held.
func TestCutterEntryBound(t *testing.T) {
	t.Parallel()
	if norace.Run(t) {
		return
	}
	var b bytes.Buffer
	b.WriteString(`{"log":{"entries":[{"request":{"method":"POST","headers":[`)
	h := `{"name":"x","value":"y"},`
	for b.Len() < maxEntry+1<<20 {
		b.WriteString(h)
	}
	b.WriteString(`{"name":"x","value":"y"}]}}]}}`)
	r, err := NewReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	if !errors.Is(err, errEntryTooLarge) && (err == nil || !strings.Contains(err.Error(), "entry too large")) {
		t.Errorf("Next = %v, want the entry refused", err)
	}
}

// A base64 body cut by the reader is decoded up to its last whole quantum
// and audited as a truncated copy of the size the HAR gives.
func TestCutBase64Body(t *testing.T) {
	if norace.Run(t) {
		return
	}
	text := strings.Repeat("QUFB", maxString/4+100)
	b, err := decodeBody(text+"\x00ahp-tap:cut", "base64", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if !b.cut || len(b.bytes) != MaxAuditBody || b.size != 1<<30 || !bytes.Equal(b.bytes[:3], []byte("AAA")) {
		t.Errorf("decodeBody: cut %v, %d bytes, size %d", b.cut, len(b.bytes), b.size)
	}
}
