package httpproxy

import (
	"fmt"
	"testing"
)

// A held head's fields, found again in its bytes, are the ones parse
// found: names up to the colon, values trimmed of spaces and tabs, LF or
// CRLF line ends (responses may use LF alone).
func TestHeldHeadFieldsAsParsed(t *testing.T) {
	for _, raw := range []string{
		"HTTP/1.1 200 OK\nContent-Type: application/json\nX-A:\t v \t\nX-Empty:\nx-a: 2\n\n",
		"POST /x?y=1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer t0k\r\nX-Colon: a:b\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\n",
	} {
		var h head
		if err := h.parse([]byte(raw), false); err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range h.fields {
			want = append(want, fmt.Sprintf("%s=%s", h.name(&h.fields[i]), h.value(&h.fields[i])))
		}
		var got []string
		hh := h.hold()
		for name, value, rest, ok := nextField(hh.fieldLines()); ok; name, value, rest, ok = nextField(rest) {
			got = append(got, name+"="+value)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("fields of %q = %q, want %q", raw, got, want)
		}
	}
}
