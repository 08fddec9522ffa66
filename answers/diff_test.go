package answers

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func frame(raw string) *tap.Frame {
	f := &tap.Frame{Raw: []byte(raw)}
	f.Decode()
	return f
}

// TestDiff: members compared by name, arrays by position, ignored
// pointers and the id left out.
func TestDiff(t *testing.T) {
	rec := frame(`{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":"draft","effects":[{"type":"deny","reason":"r"}]}}`)
	same := frame(`{"result":{"effects":[{"reason":"r","type":"deny"}],"protocolVersion":"draft"},"id":"b","jsonrpc":"2.0"}`)
	if d := Diff(rec, same, nil); len(d) != 0 {
		t.Errorf("Diff(reordered) = %v, want none", d)
	}
	changed := frame(`{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":"draft","effects":[]}}`)
	d := Diff(rec, changed, nil)
	if len(d) != 1 || d[0].String() != `/result/effects/0: recorded {"reason":"r","type":"deny"}, got absent` {
		t.Errorf("Diff(changed) = %v", d)
	}
	ptr, _ := ParsePointer("/result/effects/*")
	if d := Diff(rec, changed, []Pointer{ptr}); len(d) != 0 {
		t.Errorf("Diff(changed, ignored) = %v, want none", d)
	}
	if d := Diff(rec, nil, nil); len(d) != 1 || d[0].Got != "no answer" {
		t.Errorf("Diff(no answer) = %v", d)
	}
}
