package tap

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func mustParse(t *testing.T, s string) (*Value, []DuplicateKey) {
	t.Helper()
	v, dups, err := ParseJSON([]byte(s))
	if err != nil {
		t.Fatalf("ParseJSON(%q) = %v", s, err)
	}
	return v, dups
}

func TestParseDuplicateKeys(t *testing.T) {
	v, dups := mustParse(t, `{"a":1,"b":{"c":true,"c":false},"a":2}`)
	want := []DuplicateKey{{Pointer: "/b/c", Key: "c"}, {Pointer: "/a", Key: "a"}}
	if len(dups) != len(want) || dups[0] != want[0] || dups[1] != want[1] {
		t.Errorf("dups = %v, want %v", dups, want)
	}
	if got := v.Get("a").Str; got != "2" {
		t.Errorf(`Get("a") = %s, want 2 (last duplicate wins)`, got)
	}
	if len(v.Obj) != 3 {
		t.Errorf("members = %d, want 3 (duplicates kept in wire order)", len(v.Obj))
	}
	// Keys needing escapes in the pointer.
	_, dups = mustParse(t, `{"x":[{"a/b~c":1,"a/b~c":2}]}`)
	if len(dups) != 1 || dups[0].Pointer != "/x/0/a~1b~0c" {
		t.Errorf("dups = %v, want one at /x/0/a~1b~0c", dups)
	}
	// Same key in sibling objects is no duplicate.
	if _, dups = mustParse(t, `[{"a":1},{"a":2}]`); len(dups) != 0 {
		t.Errorf("dups = %v, want none", dups)
	}
}

func TestParseManyKeysDuplicateAtEnd(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	const n = 50000
	for i := range n {
		b.WriteString(`"k` + itoa(i) + `":0,`)
	}
	b.WriteString(`"k7":1}`)
	v, dups := mustParse(t, b.String())
	if len(v.Obj) != n+1 || len(dups) != 1 || dups[0].Pointer != "/k7" {
		t.Errorf("members %d, dups %v; want %d and one at /k7", len(v.Obj), dups, n+1)
	}
	if got := v.Get("k7").Str; got != "1" {
		t.Errorf(`Get("k7") = %s, want 1`, got)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestAbsentVersusNull(t *testing.T) {
	v, _ := mustParse(t, `{"id":null,"params":{}}`)
	if id := v.Get("id"); id == nil || !id.IsNull() {
		t.Errorf(`Get("id") = %v, want an explicit null`, id)
	}
	if r := v.Get("result"); r != nil || v.Has("result") {
		t.Errorf(`Get("result") = %v, want absent (nil)`, r)
	}
	if v.Get("params").IsNull() || !v.Get("params").Is(Object) {
		t.Error("params should be an empty object")
	}
	var absent *Value
	if absent.Get("x") != nil || absent.IsNull() || absent.Path("a", "b") != nil || absent.Digest() != "" {
		t.Error("methods on an absent value must report absence")
	}
}

func TestIDsAreNeverCoerced(t *testing.T) {
	keys := map[string]string{}
	for _, lit := range []string{`1`, `1.0`, `"1"`, `1e0`, `null`, `-0`, `0`} {
		v, _ := mustParse(t, lit)
		k := IDKey(v)
		if prev, ok := keys[k]; ok {
			t.Errorf("IDKey(%s) = IDKey(%s) = %q; ids must stay distinct", lit, prev, k)
		}
		keys[k] = lit
		if got := IDText(v); got != lit {
			t.Errorf("IDText(%s) = %s, want it as written", lit, got)
		}
	}
	if IDKey(nil) != "" {
		t.Error(`IDKey(absent) != ""`)
	}
	one, _ := mustParse(t, `1`)
	oneF, _ := mustParse(t, `1.0`)
	if one.Digest() == oneF.Digest() {
		t.Error("1 and 1.0 have one digest; numbers must be kept as written")
	}
}

func TestCanonicalDigest(t *testing.T) {
	a, _ := mustParse(t, `{"b":[1,"x"],"a":{"d":null,"c":true}}`)
	b, _ := mustParse(t, " { \"a\" : {\"c\":true,\"d\":null}, \"b\":[1,\"\\u0078\"] } ")
	if a.Digest() != b.Digest() {
		t.Errorf("same content, different digests:\n%s\n%s", a.Canonical(), b.Canonical())
	}
	c, _ := mustParse(t, `{"b":["x",1],"a":{"d":null,"c":true}}`)
	if a.Digest() == c.Digest() {
		t.Error("array order must change the digest")
	}
}

func TestCanonicalStrings(t *testing.T) {
	v, _ := mustParse(t, `{"k\"\\":"a\u0001\n\"é\u2028"}`)
	want := "{\"k\\\"\\\\\":\"a\\u0001\\u000a\\\"é\u2028\"}"
	if got := string(v.Canonical()); got != want {
		t.Errorf("Canonical() = %s, want %s", got, want)
	}
}

func TestParseStringsAndNumbers(t *testing.T) {
	for lit, want := range map[string]string{
		`"a\u2028b"`:         "a\u2028b",
		`"\ud83d\ude00"`:     "😀",
		`"\ud800"`:           "\uFFFD",
		`"\"\\\/\b\f\n\r\t"`: "\"\\/\b\f\n\r\t",
		`"é"`:                "é",
	} {
		v, _ := mustParse(t, lit)
		if v.Kind != String || v.Str != want {
			t.Errorf("ParseJSON(%s) = %q, want %q", lit, v.Str, want)
		}
	}
	for _, lit := range []string{`0`, `-1`, `1.5e-3`, `1E+9`, `123456789012345678901234567890`} {
		v, _ := mustParse(t, lit)
		if v.Kind != Number || v.Str != lit {
			t.Errorf("ParseJSON(%s) = %v %q, want the literal", lit, v.Kind, v.Str)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `1.`, `+1`, `.5`, `1e`, `-`,
		`"abc`, "\"a\x01b\"", `"\x"`, `"\u12g4"`, `tru`, `nul`, `{} {}`, `[1] x`, `NaN`, `'a'`,
	} {
		if _, _, err := ParseJSON([]byte(s)); err == nil {
			t.Errorf("ParseJSON(%q) = nil error, want a syntax error", s)
		} else if se := new(SyntaxError); !errors.As(err, &se) {
			t.Errorf("ParseJSON(%q) error %T, want *SyntaxError", s, err)
		}
	}
}

func TestParseDeepNesting(t *testing.T) {
	ok := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	if _, _, err := ParseJSON([]byte(ok)); err != nil {
		t.Errorf("5000 levels: %v", err)
	}
	deep := strings.Repeat(`{"a":`, maxDepth+5) + "1" + strings.Repeat("}", maxDepth+5)
	if _, _, err := ParseJSON([]byte(deep)); err == nil || !strings.Contains(err.Error(), "deep") {
		t.Errorf("%d levels: err = %v, want nesting too deep", maxDepth+5, err)
	}
	// A million unclosed brackets: an error, not a stack overflow.
	if _, _, err := ParseJSON(bytes.Repeat([]byte("["), 1<<20)); err == nil {
		t.Error("1M unclosed brackets parsed")
	}
}

func TestParseBigInput(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	big := strings.Repeat("x", 20<<20)
	v, _ := mustParse(t, `{"jsonrpc":"2.0","method":"hooks/observe","params":{"text":"`+big+`"}}`)
	if got := v.Path("params", "text").Str; len(got) != len(big) {
		t.Errorf("20 MB string decoded to %d bytes", len(got))
	}
	var arr strings.Builder
	arr.WriteString("[")
	for i := range 200000 {
		if i > 0 {
			arr.WriteString(",")
		}
		arr.WriteString(`{"i":1}`)
	}
	arr.WriteString("]")
	if v, _ := mustParse(t, arr.String()); len(v.Arr) != 200000 {
		t.Errorf("array of 200000 decoded to %d", len(v.Arr))
	}
}

func TestFrameDecode(t *testing.T) {
	f := &Frame{Raw: []byte("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"s\":\"\xff\"}}")}
	f.Decode()
	if !f.BadUTF8 || f.Tree == nil {
		t.Errorf("BadUTF8 = %v, Tree = %v; want true and a tree (the JSON is still readable)", f.BadUTF8, f.Tree)
	}
	if _, ok := f.Msg.(*Notification); !ok {
		t.Errorf("Msg = %T, want *Notification", f.Msg)
	}
	for raw, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`: "*tap.Request",
		`{"jsonrpc":"2.0","id":null,"method":"m"}`:          "*tap.Request",
		`{"jsonrpc":"2.0","method":"m"}`:                    "*tap.Notification",
		`{"jsonrpc":"2.0","id":1,"result":{}}`:              "*tap.Response",
		`{"jsonrpc":"2.0","id":1,"error":{}}`:               "*tap.Response",
		`{"jsonrpc":"2.0"}`:                                 "<nil>",
		`[{"jsonrpc":"2.0","method":"m"}]`:                  "<nil>",
	} {
		f := &Frame{Raw: []byte(raw)}
		f.Decode()
		if got := typeName(f.Msg); got != want {
			t.Errorf("Decode(%s).Msg = %s, want %s", raw, got, want)
		}
	}
	tr := &Frame{Raw: []byte(`{"jsonrpc"`), Truncated: true, Size: 1 << 20}
	tr.Decode()
	if tr.Tree != nil || tr.SyntaxErr != nil || tr.Size != 1<<20 {
		t.Error("a truncated frame must not be decoded")
	}
}

func typeName(m Message) string {
	switch m.(type) {
	case *Request:
		return "*tap.Request"
	case *Notification:
		return "*tap.Notification"
	case *Response:
		return "*tap.Response"
	}
	return "<nil>"
}

// TestParseAgreesWithEncodingJSON: our parser accepts exactly what the
// standard library accepts, on a set of tricky inputs (the fuzz target
// FuzzParseJSON checks the same on any input).
func TestParseAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\u0000"`, `-0.0e-0`, `[]`, `{}`, "\t1\n", `"\/"`, `1 2`, `[1}`} {
		_, _, err := ParseJSON([]byte(s))
		if (err == nil) != json.Valid([]byte(s)) {
			t.Errorf("ParseJSON(%q) err = %v, json.Valid = %v", s, err, json.Valid([]byte(s)))
		}
	}
}

// FuzzParseJSON: our parser accepts exactly the documents encoding/json
// accepts, and never panics.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.0,"3",null,true]}`, `{"a":1,"a":2}`, `"\ud800\udc00"`, `[[[]]]`, "\xff", `-0e+1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) > 9000 {
			return // both have a nesting limit; they need not agree at it
		}
		v, _, err := ParseJSON(data)
		if (err == nil) != json.Valid(data) {
			t.Fatalf("ParseJSON(%q) err = %v, json.Valid = %v", data, err, json.Valid(data))
		}
		if err == nil {
			_ = v.Any()
			c := v.Canonical()
			// The canonical form is JSON, and canonical again.
			w, _, err := ParseJSON(c)
			if err != nil {
				t.Fatalf("Canonical(%q) = %q, not JSON: %v", data, c, err)
			}
			if c2 := w.Canonical(); !bytes.Equal(c, c2) {
				t.Fatalf("Canonical not stable: %q then %q", c, c2)
			}
		}
	})
}

// writeJSONStringRef is the byte-at-a-time form appendJSONString must equal.
func writeJSONStringRef(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestWriteJSONStringWordScan puts every byte value at every position of
// strings around the eight-byte scan's edges, alone and with a second
// byte to escape a few bytes on: the word-at-a-time test must find each
// byte that needs escaping (a miss would make two different events share
// a digest) and leave every other byte as it is.
func TestWriteJSONStringWordScan(t *testing.T) {
	var b []byte
	for n := 1; n <= 19; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				for k, second := range []byte{'a', '"', '\\', 0x00, 0x1f} {
					buf := []byte(strings.Repeat("a\x80é", n)[:n])
					buf[pos] = byte(c)
					if at := pos + 1 + k; at < n {
						buf[at] = second
					}
					s := string(buf)
					b = appendJSONString(b[:0], s)
					if got, want := string(b), writeJSONStringRef(s); got != want {
						t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
					}
				}
			}
		}
	}
}

// TestParseSharedSourceStrings checks the strings of a small document
// (slices of one shared copy) and of a large one (copies of their own)
// against encoding/json, escapes, numbers and keys included, and that the
// decoded strings do not change when the input buffer is reused.
func TestParseSharedSourceStrings(t *testing.T) {
	small := `{"a":"plain","b":"esc\"aped\u00e9\n","c":-1.5e3,"d":["x","y\\z",2],"e":{"k":"v"}}`
	big := `{"pad":"` + strings.Repeat("p", sharedSourceMax) + `","a":"plain","b":"esc\"aped\u00e9\n","c":-1.5e3,"d":["x","y\\z",2],"e":{"k":"v"}}`
	for _, doc := range []string{small, big} {
		data := []byte(doc)
		v, _, err := ParseJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		for i := range data {
			data[i] = 'X' // a pooled read buffer, reused for the next frame
		}
		var want map[string]any
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		if got, _ := v.Get("a").Text(); got != want["a"] {
			t.Errorf("a = %q, want %q", got, want["a"])
		}
		if got, _ := v.Get("b").Text(); got != want["b"] {
			t.Errorf("b = %q, want %q", got, want["b"])
		}
		if got := v.Get("c").Str; got != "-1.5e3" {
			t.Errorf("c = %q, want the literal -1.5e3", got)
		}
		d := v.Get("d")
		if len(d.Arr) != 3 || d.Arr[1].Str != `y\z` || d.Arr[2].Str != "2" {
			t.Errorf("d = %+v", d.Arr)
		}
		if got, _ := v.Path("e", "k").Text(); got != "v" {
			t.Errorf("e.k = %q", got)
		}
	}
}

// TestParseContainersDoNotShareBacking appends to one decoded object's and
// one array's members: the siblings cut from the same slab must not change.
func TestParseContainersDoNotShareBacking(t *testing.T) {
	v, _ := mustParse(t, `{"o1":{"a":1},"o2":{"b":2},"l1":[1],"l2":[2]}`)
	o1, o2 := v.Get("o1"), v.Get("o2")
	o1.Obj = append(o1.Obj, Member{Key: "x", Val: &Value{Kind: Null}})
	if len(o2.Obj) != 1 || o2.Obj[0].Key != "b" {
		t.Fatalf("o2 changed by an append to o1: %+v", o2.Obj)
	}
	l1, l2 := v.Get("l1"), v.Get("l2")
	l1.Arr = append(l1.Arr, &Value{Kind: Null})
	if len(l2.Arr) != 1 || l2.Arr[0].Str != "2" {
		t.Fatalf("l2 changed by an append to l1: %+v", l2.Arr)
	}
}

// TestParseAfterFailedParse parses a document that fails midway (entries
// left on the pooled stacks), then a good one: the good one must decode
// exactly, with its duplicate key at the right pointer.
func TestParseAfterFailedParse(t *testing.T) {
	for range 3 {
		if _, _, err := ParseJSON([]byte(`{"a":{"b":[1,{"c":2,"d":`)); err == nil {
			t.Fatal("truncated document parsed")
		}
	}
	v, dups := mustParse(t, `{"x":{"y":[true,{"z":1,"z":2}]}}`)
	if len(dups) != 1 || dups[0].Pointer != "/x/y/1/z" {
		t.Fatalf("dups = %+v, want one at /x/y/1/z", dups)
	}
	if got := v.Path("x", "y"); len(got.Arr) != 2 || len(got.Arr[1].Obj) != 2 {
		t.Fatalf("x.y = %+v", got)
	}
	if len(v.Obj) != 1 || len(v.Get("x").Obj) != 1 {
		t.Fatalf("members leaked from the failed parse: %+v", v.Obj)
	}
}

// TestParseStringWordScan puts every byte value at every position of
// strings around the parser's eight-byte scan edges, in a small document
// (shared source) and a frozen frame: a quote, backslash or control
// character the word test missed would be accepted or cut wrongly, so the
// parser must agree with encoding/json on validity and keep every other
// byte as it is; and a byte beyond ASCII it missed would leave invalid
// UTF-8 unreported (BadUTF8 is only checked when a string has one).
func TestParseStringWordScan(t *testing.T) {
	for n := 1; n <= 19; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				buf := []byte(strings.Repeat("a\x80é", n)[:n])
				buf[pos] = byte(c)
				doc := []byte(`"` + string(buf) + `"`)
				v, _, err := ParseJSON(doc)
				f := &Frame{Raw: doc}
				f.Decode()
				if (err == nil) != json.Valid(doc) || (f.SyntaxErr == nil) != json.Valid(doc) {
					t.Fatalf("%q: ParseJSON err %v, Frame.Decode err %v, json.Valid %v", doc, err, f.SyntaxErr, json.Valid(doc))
				}
				if f.BadUTF8 != !utf8.Valid(doc) {
					t.Fatalf("%q: BadUTF8 %v, utf8.Valid %v", doc, f.BadUTF8, utf8.Valid(doc))
				}
				if err != nil {
					continue
				}
				if v.Str != string(buf) || f.Tree.Str != string(buf) {
					t.Fatalf("%q decoded as %q and %q, want %q", doc, v.Str, f.Tree.Str, buf)
				}
			}
		}
	}
}

// TestFrameDecodeAllocations: a decoded frame costs one allocation for
// its Values, one for its object members, one for its array elements and
// one for its message (the tape is reused, strings slice Raw): a slab
// per 32 values, regrown member slices or a copy of Raw would show here.
func TestFrameDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	req := []byte(`{"jsonrpc":"2.0","id":"evt-1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"evt-1",` +
		`"type":"tool.before","time":"2026-08-24T08:51:14Z","harness":{"name":"h","version":"1.0.0"},"session":{"id":"s","cwd":"/w"},` +
		`"tool":{"name":"Bash","kind":"shell","input":{"command":"echo ` + strings.Repeat("x", 640) + `"}},"call":{"id":"c"}},` +
		`"capabilities":{"effects":["deny","allow"]}}}`)
	resp := []byte(`{"jsonrpc":"2.0","id":"evt-1","result":{"protocolVersion":"draft"}}`)
	for _, c := range []struct {
		raw  []byte
		want float64
	}{{req, 4}, {resp, 3}} {
		got := testing.AllocsPerRun(100, func() {
			f := Frame{Raw: c.raw}
			f.Decode()
			if f.Msg == nil {
				t.Fatalf("%s: no message", c.raw)
			}
		})
		if got > c.want {
			t.Errorf("decoding %d bytes: %v allocations, want at most %v", len(c.raw), got, c.want)
		}
	}
}

// TestParseLargeDocuments decodes documents wider and deeper than one
// build chunk (values, members and elements in several allocations) and
// compares them with encoding/json, members in wire order and spans
// included.
func TestParseLargeDocuments(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"wide":{`)
	for i := range 3*buildChunk + 7 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":[%d,"s%d",{"n":null,"t":true}]`, i, i, i)
	}
	b.WriteString(`},"long":[`)
	for i := range 2*buildChunk + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%d.5`, i)
	}
	b.WriteString(`],"deep":` + strings.Repeat(`[{"a":`, 700) + `0` + strings.Repeat(`}]`, 700) + `}`)
	doc := []byte(b.String())
	for _, frozen := range []bool{false, true} {
		var d Decoder
		v, err := d.parse(doc, frozen)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v.Any(), want) {
			t.Fatalf("frozen %v: the decoded document differs from encoding/json's", frozen)
		}
		wide := v.Get("wide")
		if len(wide.Obj) != 3*buildChunk+7 {
			t.Fatalf("wide has %d members", len(wide.Obj))
		}
		for i, m := range wide.Obj {
			if m.Key != "k"+strconv.Itoa(i) || string(doc[m.Val.Start:m.Val.End]) != fmt.Sprintf(`[%d,"s%d",{"n":null,"t":true}]`, i, i) {
				t.Fatalf("member %d: %q spans %q", i, m.Key, doc[m.Val.Start:m.Val.End])
			}
		}
		if l := v.Get("long"); len(l.Arr) != 2*buildChunk+1 || l.Arr[2*buildChunk].Str != strconv.Itoa(2*buildChunk)+".5" {
			t.Fatalf("long: %d elements", len(l.Arr))
		}
	}
}

// TestParseDuplicateKeysSpelledApart: a key written with escapes is the
// same key as its plain spelling, in a small document (keys are slices of
// the source or decoded on the side) and in one too large to share a
// source (every key decoded), in wide objects (map index) and narrow ones.
func TestParseDuplicateKeysSpelledApart(t *testing.T) {
	wide := ""
	for i := range indexAt + 2 {
		wide += `"w` + itoa(i) + `":0,`
	}
	for _, pad := range []string{"", strings.Repeat("p", sharedSourceMax)} {
		for _, extra := range []string{"", wide} {
			doc := `{"pad":"` + pad + `","x":[{` + extra + `"a\/b":1,"k\u00e9y":2,"a/b":3,"ké\u0079":4,"A/b":5}]}`
			v, dups := mustParse(t, doc)
			if len(dups) != 2 || dups[0] != (DuplicateKey{Pointer: "/x/0/a~1b", Key: "a/b"}) || dups[1] != (DuplicateKey{Pointer: "/x/0/kéy", Key: "kéy"}) {
				t.Fatalf("pad %d, extra %d: dups = %+v, want a/b and kéy", len(pad), len(extra), dups)
			}
			o := v.Path("x").Arr[0]
			if got := o.Get("a/b").Str; got != "3" {
				t.Fatalf("a/b = %s, want 3 (the last wins)", got)
			}
			if got := o.Get("kéy").Str; got != "4" {
				t.Fatalf("kéy = %s, want 4", got)
			}
			if k := o.Obj[len(o.Obj)-5].Key; k != "a/b" {
				t.Fatalf("escaped key decoded as %q", k)
			}
		}
	}
}

// TestPtr: tokens are escaped (RFC 6901) and joined onto the base, and the
// pointer costs one allocation, whatever its indices.
func TestPtr(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Ptr("/result/effects", 0), "/result/effects/0"},
		{Ptr("/result/effects", 1234, "type"), "/result/effects/1234/type"},
		{Ptr("", "a/b", "m~n", -7), "/a~1b/m~0n/-7"},
		{Ptr("/params"), "/params"},
		{Ptr("/x", uint8(3)), "/x/3"},
	} {
		if c.got != c.want {
			t.Errorf("Ptr = %q, want %q", c.got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = Ptr("/result/effects", 1234, "type") }); n != 1 {
		t.Errorf("Ptr allocates %v times, want 1", n)
	}
}

// TestStringScanEveryPosition: a string is decoded as encoding/json
// decodes it, and its bytes beyond ASCII are noticed, whatever the
// position of a special byte (control character, backslash escape,
// byte beyond ASCII) in it: before, inside and after the eight-byte
// words and the long-string span the scanner takes at a time.
func TestStringScanEveryPosition(t *testing.T) {
	for n := 0; n <= 48; n++ {
		for at := 0; at < n; at++ {
			for _, special := range []string{"\x01", "\x1f", `\n`, `\"`, `\u00e9`, "é", "\xff", "\x7f", " "} {
				body := strings.Repeat("a", at) + special + strings.Repeat("b", n-at-1)
				doc := []byte(`{"k":"` + body + `","z":1}`)
				var want struct{ K string }
				werr := json.Unmarshal(doc, &want)
				var d Decoder
				v, err := d.Parse(doc)
				if (err != nil) != (werr != nil) && utf8.Valid(doc) {
					t.Fatalf("%q: error %v, encoding/json says %v", doc, err, werr)
				}
				if err != nil {
					continue
				}
				if got, _ := v.Get("k").Text(); utf8.Valid(doc) && got != want.K {
					t.Fatalf("%q: decoded %q, want %q", doc, got, want.K)
				}
				if ascii := !strings.ContainsFunc(string(doc), func(r rune) bool { return r >= 0x80 || r == utf8.RuneError }) && utf8.Valid(doc); d.ascii != ascii {
					t.Fatalf("%q: ascii = %v, want %v", doc, d.ascii, ascii)
				}
			}
		}
	}
}

// TestSpecialMaskFirstByte: the parser's word scan steps to the lowest
// byte specialMask marks and reads it as the first quote, backslash or
// control character of the eight. Every byte value at every position,
// after ordinary bytes (ASCII and beyond) and before special and ordinary
// ones: a mark below the first special byte would end a string early, one
// missing would let a quote through.
func TestSpecialMaskFirstByte(t *testing.T) {
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }
	fill := []byte{'a', 0x80, 0xff, ' ', 0x7f, 0xa0, '!', 0x9f, ']', 0x21}
	after := []byte{'"', '\\', 0x00, 0x1f, 'z', 0xe0, 0x20}
	for at := range 8 {
		for c := range 256 {
			for k := range after {
				var b [8]byte
				for i := range b {
					switch {
					case i < at:
						b[i] = fill[(i+c+k)%len(fill)]
					case i == at:
						b[i] = byte(c)
					default:
						b[i] = after[(i+k)%len(after)]
					}
				}
				first := 8
				for i, x := range b {
					if special(x) {
						first = i
						break
					}
				}
				m := specialMask(binary.LittleEndian.Uint64(b[:]))
				got := 8
				if m != 0 {
					got = bits.TrailingZeros64(m) / 8
				}
				if got != first {
					t.Fatalf("% x: specialMask's lowest mark at byte %d, first special byte at %d", b, got, first)
				}
			}
		}
	}
}

// TestParseDuplicateKeySums: the parser compares in full only keys whose
// sums (length and first eight bytes) agree. Keys of every length around
// eight bytes, spelled with an escape or without, alike in their first
// eight bytes and different after, and at the very end of the document
// (where the sum is read byte by byte): each duplicate is found once, and
// no key alike in its sum is taken for one.
func TestParseDuplicateKeySums(t *testing.T) {
	for n := 1; n <= 18; n++ {
		key := strings.Repeat("k", n-1) + "z"
		escaped := fmt.Sprintf(`\u%04x`, key[0]) + key[1:] // the same key, its first byte escaped
		alike := key[:n-1] + "y"                           // same length and, for n > 8, first eight bytes
		for _, doc := range []string{
			`{"` + key + `":1,"` + alike + `":2,"` + escaped + `":3}`,
			`{"` + escaped + `":1,"` + alike + `":2,"` + key + `":3}`,
			`{"` + alike + `":1,"` + key + `":2,"` + key + `":3}`,
		} {
			v, dups := mustParse(t, doc)
			if len(dups) != 1 || dups[0].Key != key {
				t.Fatalf("%s: dups %+v, want %s once", doc, dups, key)
			}
			if got := v.Get(key).Str; got != "3" {
				t.Fatalf("%s: %s = %s, want 3 (the last wins)", doc, key, got)
			}
			if got := v.Get(alike).Str; got == "" {
				t.Fatalf("%s: %s lost", doc, alike)
			}
		}
	}
}

// TestParseDuplicateKeyPointers: the parser keeps the path of the
// containers it is in, not of every member, and adds a duplicate's own key
// when it finds one: pointers through arrays whose scalars come first,
// duplicates whose values are containers holding duplicates themselves.
func TestParseDuplicateKeyPointers(t *testing.T) {
	_, dups := mustParse(t, `{"a":[0,"s",{"b":1,"b":{"c":[true,{"d":1,"d":[2]}]}}],"e":{},"a":3}`)
	want := []DuplicateKey{{"/a/2/b/c/1/d", "d"}, {"/a/2/b", "b"}, {"/a", "a"}}
	if !reflect.DeepEqual(dups, want) {
		t.Errorf("dups %+v, want %+v", dups, want)
	}
}
