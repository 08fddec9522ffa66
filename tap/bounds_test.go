package tap

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/norace"
)

// dupParams is an intercept request whose params hold n members all named
// "x" (n-1 duplicates), nested depth objects down.
func dupParams(n, depth int) string {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","params":`)
	b.WriteString(strings.Repeat(`{"a":`, depth))
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"xxxxxxx":1`)
	}
	b.WriteString("}")
	b.WriteString(strings.Repeat("}", depth))
	b.WriteString("}")
	return b.String()
}

// Issue 8 item 6: 200,000 duplicate keys in a 2 MB request cost work linear
// in the members, and only the first MaxDuplicateKeys are listed.
func TestDuplicateKeysLinear(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	if norace.Run(t) {
		return
	}
	for _, n := range []int{20_000, 200_000} {
		doc := dupParams(n, 0)
		var d Decoder
		if _, err := d.Parse([]byte(doc)); err != nil {
			t.Fatalf("Parse(%d members) = %v", n, err)
		}
		if d.DupCount != n-1 || len(d.Dups) != MaxDuplicateKeys {
			t.Errorf("Parse(%d members): DupCount %d, listed %d; want %d, %d", n, d.DupCount, len(d.Dups), n-1, MaxDuplicateKeys)
		}
		// A map from indexAt members on: at most indexAt comparisons per member.
		if d.KeyCompares > indexAt*n {
			t.Errorf("Parse(%d members): %d key comparisons, want at most %d (linear)", n, d.KeyCompares, indexAt*n)
		}
		if n == 200_000 && len(doc) < 2<<20 {
			t.Errorf("document of %d bytes, want the 2 MB of the issue", len(doc))
		}
	}
}

// Duplicates deep down used to cost a pointer of the full depth each:
// quadratic time and memory. Only MaxDuplicateKeys pointers are built.
func TestDuplicateKeysDeep(t *testing.T) {
	const n, depth = 5000, 3000
	f := &Frame{Raw: []byte(dupParams(n, depth))}
	f.Decode()
	if f.SyntaxErr != nil || f.Tree == nil {
		t.Fatalf("Decode: %v", f.SyntaxErr)
	}
	if f.DupCount != n-1 || len(f.Dups) != MaxDuplicateKeys {
		t.Errorf("DupCount %d, listed %d; want %d, %d", f.DupCount, len(f.Dups), n-1, MaxDuplicateKeys)
	}
	want := "/params" + strings.Repeat("/a", depth) + "/xxxxxxx"
	if len(f.Dups) > 0 && f.Dups[0].Pointer != want {
		t.Errorf("first duplicate at %.40q…, want %.40q…", f.Dups[0].Pointer, want)
	}
}

// A frame past MaxFrameValues is not decoded and is one TAP-1 fact; one
// value fewer and it is audited as usual.
func TestFrameValueBound(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	if norace.Run(t) {
		return
	}
	array := func(values int) []byte { // one array holding values-1 zeros
		return []byte("[" + strings.TrimSuffix(strings.Repeat("0,", values-1), ",") + "]")
	}
	over := &Frame{Raw: array(MaxFrameValues + 1)}
	e := NewEngine(Config{}, nil)
	fs := e.Feed(over)
	if !over.OverBound || over.Tree != nil || over.SyntaxErr != nil || !over.Unchecked() {
		t.Errorf("over the bound: OverBound %v, Tree %v, SyntaxErr %v; want true, nil, nil", over.OverBound, over.Tree != nil, over.SyntaxErr)
	}
	if len(fs) != 1 || fs[0].Check != "TAP-1" {
		t.Errorf("Feed(over the bound) = %v, want one TAP-1 finding", fs)
	}
	at := &Frame{Raw: array(MaxFrameValues)}
	if fs := e.Feed(at); len(fs) != 0 || at.OverBound || at.Tree == nil || len(at.Tree.Arr) != MaxFrameValues-1 {
		t.Errorf("Feed(at the bound) = %v, OverBound %v; want no finding and a decoded tree", fs, at.OverBound)
	}
}

// floodRule reports n findings on every frame.
type floodRule struct{ n int }

func (r floodRule) Info() RuleInfo {
	return RuleInfo{ID: "BASE-1/flood", Check: "BASE-1", Level: Error}
}
func (r floodRule) Check(c *Conversation, f *Frame) []Finding {
	out := make([]Finding, r.n)
	for i := range out {
		out[i] = r.Info().At(f, Error, "", "finding %d", i)
	}
	return out
}

// One frame reports at most MaxFindingsPerFrame findings and a TAP-1 count
// of the rest.
func TestFindingsPerFrameBound(t *testing.T) {
	e := NewEngine(Config{}, []Rule{floodRule{n: MaxFindingsPerFrame + 500}})
	fs := e.Feed(&Frame{Raw: []byte(`{}`)})
	if len(fs) != MaxFindingsPerFrame+1 {
		t.Fatalf("findings = %d, want %d", len(fs), MaxFindingsPerFrame+1)
	}
	last := fs[len(fs)-1]
	if last.Check != "TAP-1" || !strings.Contains(last.Message, "500 more findings") {
		t.Errorf("last finding = %v, want TAP-1 counting 500 more", last)
	}
	e = NewEngine(Config{}, []Rule{floodRule{n: MaxFindingsPerFrame}})
	if fs := e.Feed(&Frame{Raw: []byte(`{}`)}); len(fs) != MaxFindingsPerFrame || fs[len(fs)-1].Check == "TAP-1" {
		t.Errorf("findings = %d (last %v), want %d and no TAP-1", len(fs), fs[len(fs)-1], MaxFindingsPerFrame)
	}
}
