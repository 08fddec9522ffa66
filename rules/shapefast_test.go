package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// TestFieldIndexAgreesWithScan: for every event type's shape and the
// other object shapes the walk uses most, the perfect hash finds each
// field by its name and no field for a key that is not one (names one
// byte off, or alike in length, first, middle and last byte); and the
// event shapes do get a hash (else the walk falls back to comparing each
// member with each field).
func TestFieldIndexAgreesWithScan(t *testing.T) {
	objs := map[string]*obj{"envelope": &envelope, "message": &message, "deny effect": &denyEffect, "modify effect": &modifyEffect, "inject effect": &injectEffect}
	for typ, spec := range eventSpecs {
		objs[typ] = &spec.obj
	}
	for name, o := range objs {
		ix := o.fieldIndexOf()
		if ix.slots == nil {
			t.Errorf("%s: %d fields, no perfect hash", name, len(o.fields))
			continue
		}
		for i, f := range o.fields {
			if got := o.field(ix, f.name); got != i {
				t.Errorf("%s: field %q found at %d, want %d", name, f.name, got, i)
			}
			for _, other := range []string{"", f.name + "x", "x" + f.name, f.name[:len(f.name)-1], mangle(f.name)} {
				want := -1
				for j := range o.fields {
					if o.fields[j].name == other {
						want = j
					}
				}
				if got := o.field(ix, other); got != want {
					t.Errorf("%s: key %q found field %d, want %d", name, other, got, want)
				}
			}
		}
	}
}

// mangle changes a byte of s that keySig does not read, when it has one.
func mangle(s string) string {
	if len(s) < 4 {
		return s + "?"
	}
	b := []byte(s)
	b[1] ^= 0x20
	return string(b)
}

// TestFieldIndexFallback: fields with no perfect hash (a name twice, or
// two names keySig cannot tell apart) are matched by comparing every
// name, as before: each member still finds its field.
func TestFieldIndexFallback(t *testing.T) {
	c := newChecker("")
	defer func() { checkers.Put(c) }()
	o := &obj{check: evt, what: "the thing", closed: true, fields: []field{
		req("tape", str(evt)), req("type", str(evt)), opt("n", integer(evt, 0)),
	}}
	if ix := o.fieldIndexOf(); ix.slots != nil {
		t.Fatalf("tape and type share a perfect hash slot? %+v", ix)
	}
	v, _, err := tap.ParseJSON([]byte(`{"tape":"a","type":1,"n":"x","other":true}`))
	if err != nil {
		t.Fatal(err)
	}
	o.check1(c, v)
	var got []string
	for _, p := range c.probs {
		got = append(got, p.ptr+": "+p.msg)
	}
	want := []string{
		`/other: the thing is closed: unknown member "other" is not allowed`,
		`/type: "type" must be a string, found 1`,
		`/n: "n" must be an integer, found "x"`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("problem %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// TestURICharsEveryByte: uriChars passes by table what RFC 3986's pchar
// allows (unreserved, sub-delims, ":" and "@"), a "%" only before two hex
// digits, and the extra bytes it is given; every byte value, alone and
// between allowed ones.
func TestURICharsEveryByte(t *testing.T) {
	const unreserved = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
	for b := range 256 {
		c := string([]byte{byte(b)})
		for _, extra := range []string{"", "/", "/?"} {
			want := strings.Contains(unreserved+"!$&'()*+,;="+":@"+extra, c)
			for _, s := range []string{c, "a" + c + "b", c + c} {
				if got := uriChars(s, extra); got != want {
					t.Errorf("uriChars(%q, %q) = %v, want %v", s, extra, got, want)
				}
			}
		}
	}
	for s, want := range map[string]bool{"%2F": true, "a%2fb": true, "%2": false, "%G0": false, "%": false, "a%0": false} {
		if got := uriChars(s, ""); got != want {
			t.Errorf("uriChars(%q) = %v, want %v", s, got, want)
		}
	}
}
