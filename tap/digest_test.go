package tap

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDigestIdentity: the digest is of the content. Objects already in key
// order are digested as they are and others sorted first; both must agree,
// and a duplicate key counts only with its last value, whether the
// duplicates are adjacent (in order) or not.
func TestDigestIdentity(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":{"c":"x","d":[true,null]}}`, `{"b":{"d":[true,null],"c":"\u0078"},"a":1}`, " { \"b\" : { \"c\" : \"x\" , \"d\" : [ true , null ] } , \"a\" : 1 } "},
		{`{"a":2}`, `{"a":1,"a":2}`, `{"a":{"z":0},"a":2}`},
		{`{"a":1,"b":2}`, `{"b":0,"a":1,"b":2}`, `{"a":9,"b":2,"a":1}`},
		{`{}`, ` { } `},
		{`"é\n"`, `"\u00e9\u000a"`},
	}
	var sums [][32]byte
	for _, group := range same {
		first, _ := mustParse(t, group[0])
		want := first.Sum()
		if got := first.Digest(); got != hex.EncodeToString(want[:]) {
			t.Errorf("%s: Digest %s is not the hex of Sum %x", group[0], got, want)
		}
		for _, s := range group[1:] {
			v, _ := mustParse(t, s)
			if v.Sum() != want {
				t.Errorf("%s and %s have different digests:\n%s\n%s", group[0], s, first.Canonical(), v.Canonical())
			}
		}
		for i, other := range sums {
			if other == want {
				t.Errorf("%s has the digest of %s", group[0], same[i][0])
			}
		}
		sums = append(sums, want)
	}
	for _, pair := range [][2]string{
		{`{"a":1}`, `{"a":1.0}`},
		{`{"a":1,"a":2}`, `{"a":1}`},
		{`{"a":2,"a":1}`, `{"a":2}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
		{`{"a":"1"}`, `{"a":1}`},
		{`{"ab":1}`, `{"a":1,"b":1}`},
	} {
		a, _ := mustParse(t, pair[0])
		b, _ := mustParse(t, pair[1])
		if a.Sum() == b.Sum() {
			t.Errorf("%s and %s have one digest; they differ in content", pair[0], pair[1])
		}
	}
	// Large objects (sorted another way than small ones) too: 30 members
	// written backwards, one of them twice, against the same in order.
	var back, fwd []string
	for i := 29; i >= 0; i-- {
		back = append(back, fmt.Sprintf(`"k%02d":%d`, i, i))
		fwd = append([]string{fmt.Sprintf(`"k%02d":%d`, i, i)}, fwd...)
	}
	back = append([]string{`"k07":"first"`}, back...)
	a, _ := mustParse(t, "{"+strings.Join(back, ",")+"}")
	b, _ := mustParse(t, "{"+strings.Join(fwd, ",")+"}")
	if a.Sum() != b.Sum() {
		t.Errorf("large objects: different digests:\n%s\n%s", a.Canonical(), b.Canonical())
	}
	back[0] = `"k07":7`
	back[len(back)-8] = `"k07":"last"`
	a, _ = mustParse(t, "{"+strings.Join(back, ",")+"}")
	if a.Sum() == b.Sum() {
		t.Errorf("large objects: the last duplicate does not win:\n%s", a.Canonical())
	}
	var absent *Value
	if absent.Sum() != [32]byte{} || absent.Digest() != "" {
		t.Error("an absent value has a digest")
	}
}

// TestMemoryStoreSumAndOutcome: a record stored with its digest as bytes
// loads with that digest in hex, as Store of the hex would give; an
// outcome set in place changes the outcome alone, and only of an event
// the store holds.
func TestMemoryStoreSumAndOutcome(t *testing.T) {
	ev, _ := mustParse(t, `{"id":"e1","source":"urn:s","type":"tool.before"}`)
	k := EventKey{Source: "urn:s", ID: "e1"}
	r := EventRecord{RPCID: `s:e1`, Method: "hooks/intercept", Type: "tool.before", Seq: 3, DeadlineMs: 500}
	s := &MemoryStore{}
	s.storeSum(k, r, ev.Sum())
	viaHex := &MemoryStore{}
	r.Digest = ev.Digest()
	viaHex.Store(k, r)
	got, ok := s.Load(k)
	want, _ := viaHex.Load(k)
	if !ok || got != want || got.Digest != ev.Digest() {
		t.Fatalf("stored as bytes: %+v, %v; stored as hex: %+v", got, ok, want)
	}
	if !s.setOutcome(k, OutcomeDeny) {
		t.Fatal("setOutcome did not find the event")
	}
	want.Outcome = OutcomeDeny
	if got, _ := s.Load(k); got != want {
		t.Errorf("after setOutcome: %+v, want %+v", got, want)
	}
	other := EventKey{Source: "urn:s", ID: "e2"}
	if s.setOutcome(other, OutcomeDeny) {
		t.Error("setOutcome found an event never stored")
	}
	if _, ok := s.Load(other); ok || s.Len() != 1 {
		t.Errorf("setOutcome of an unknown event stored it (%d events)", s.Len())
	}
}

// TestCanonicalPlainStringsAsScanned: a string the decoder read without
// escapes is written into the canonical form as it is, unscanned; that
// must give exactly what escaping its text gives, for every string of the
// upstream fixtures and of a few chosen documents (non-ASCII, HTML
// characters, invalid UTF-8, long commands).
func TestCanonicalPlainStringsAsScanned(t *testing.T) {
	docs := [][]byte{
		[]byte(`{"command":"echo <b>&amp;</b> é 日本 ` + strings.Repeat("0123456789abcdef", 40) + `","x":"tab\tand \"quote\""}`),
		[]byte("{\"bad\":\"\xff\xfe\",\"ok\":\"plain\"}"),
	}
	files, _ := filepath.Glob("../../shared/ahp/fixtures/draft/*/*.json")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			docs = append(docs, b)
		}
	}
	plain := 0
	for i, doc := range docs {
		v, err := (&Decoder{}).Parse(doc)
		if err != nil {
			continue
		}
		var scanned func(v *Value) *Value
		scanned = func(v *Value) *Value { // a copy with every string scanned
			if v == nil {
				return nil
			}
			c := *v
			if c.plain {
				plain++
			}
			c.plain = false
			c.Arr, c.Obj = nil, nil
			for _, e := range v.Arr {
				c.Arr = append(c.Arr, scanned(e))
			}
			for _, m := range v.Obj {
				c.Obj = append(c.Obj, Member{Key: m.Key, Val: scanned(m.Val)})
			}
			return &c
		}
		if got, want := string(v.Canonical()), string(scanned(v).Canonical()); got != want {
			t.Errorf("document %d: canonical form with plain strings\n%s\nwant\n%s", i, got, want)
		}
	}
	if len(files) == 0 || plain == 0 {
		t.Fatalf("%d fixtures, %d plain strings: the test checked nothing", len(files), plain)
	}
}

// TestSortMembersAgreesWithStableSort: the insertion sort of small
// objects compares keys by their first eight bytes first; it must order
// every set of keys as a stable sort of the strings does: keys that are
// prefixes of others, that share their first eight bytes, that hold zero
// bytes (alike in prefix to a shorter key), duplicates in wire order.
func TestSortMembersAgreesWithStableSort(t *testing.T) {
	alphabet := []string{"", "a", "ab", "ab\x00", "ab\x00\x00", "abcdefgh", "abcdefgh\x00", "abcdefghi", "abcdefgg", "b", "\xff", "\x00", "abcdefghij", "ab\x01"}
	rnd := uint32(1)
	next := func(n int) int { rnd = rnd*1103515245 + 12345; return int(rnd>>16) % n }
	for round := range 3000 {
		n := 1 + next(24)
		ms := make([]Member, n)
		for i := range ms {
			ms[i] = Member{Key: alphabet[next(len(alphabet))], Val: &Value{Kind: Number, Str: strconv.Itoa(i)}}
		}
		ord := make([]int32, n)
		want := make([]int32, n)
		for i := range ord {
			ord[i], want[i] = int32(i), int32(i)
		}
		sortMembers(ms, ord)
		slices.SortStableFunc(want, func(x, y int32) int { return strings.Compare(ms[x].Key, ms[y].Key) })
		if !slices.Equal(ord, want) {
			t.Fatalf("round %d: keys %v sorted as %v, want %v", round, ms, ord, want)
		}
	}
}

// TestCanonWriterRemembersOrders: a canonWriter reuses the key order of
// the last value's objects when the keys come again in the same order.
// Values of random objects (keys drawn from a few, so that orders repeat,
// and repeat permuted; duplicates; nesting) written one after the other by
// one writer must each come out as a fresh writer writes them.
func TestCanonWriterRemembersOrders(t *testing.T) {
	keys := []string{`"id"`, `"type"`, `"source"`, `"time"`, `"a"`, `"b"`, `"ab"`, `"tool"`, `"x\u0000"`, `"x"`}
	rnd := uint32(7)
	next := func(n int) int { rnd = rnd*1103515245 + 12345; return int(rnd>>16) % n }
	var object func(depth int) string
	object = func(depth int) string {
		n := 1 + next(6)
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(keys[next(len(keys))] + ":")
			if depth < 3 && next(3) == 0 {
				b.WriteString(object(depth + 1))
			} else {
				fmt.Fprintf(&b, "%d", next(100))
			}
		}
		b.WriteByte('}')
		return b.String()
	}
	reused := new(canonWriter)
	var prev string
	for round := range 5000 {
		doc := prev
		if round%3 != 0 || doc == "" { // a third of the values repeat the last one's shape
			doc = object(0)
		}
		prev = doc
		v, _ := mustParse(t, doc)
		fresh := new(canonWriter)
		fresh.reset()
		fresh.write(v)
		reused.reset()
		reused.write(v)
		if string(reused.b) != string(fresh.b) {
			t.Fatalf("round %d: %s written as\n%s\nafter other values, as\n%s\nfresh", round, doc, reused.b, fresh.b)
		}
	}
}
