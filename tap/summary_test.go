package tap

import (
	"testing"
	"unsafe"
)

// TestSummaryKeepsNoSource: a settled exchange's frames keep their id and
// method, and no string of theirs points into the frame's bytes (which
// the decoded strings slice: one kept method would pin the whole frame).
func TestSummaryKeepsNoSource(t *testing.T) {
	for _, c := range []struct {
		raw, method string
		allocs      float64 // the summary, and a copy of each string not one of the protocol's names
	}{
		{`{"jsonrpc":"2.0","id":"evt-1","method":"hooks/intercept","params":{}}`, "hooks/intercept", 2},
		{`{"jsonrpc":"2.0","id":7,"method":"vendor/custom","params":{}}`, "vendor/custom", 3},
		{`{"jsonrpc":"2.0","id":"evt-1","result":{}}`, "", 2},
		{`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}`, "", 1},
	} {
		f := &Frame{Seq: 3, Raw: []byte(c.raw)}
		f.Decode()
		s := f.summary()
		if s.Seq != 3 || s.Method() != c.method || IDText(s.RPCID()) != IDText(f.RPCID()) || s.Tree != nil || s.Raw != nil {
			t.Fatalf("%s: summary %+v: method %q id %q", c.raw, s, s.Method(), IDText(s.RPCID()))
		}
		lo, hi := uintptr(unsafe.Pointer(&f.Raw[0])), uintptr(unsafe.Pointer(&f.Raw[len(f.Raw)-1]))
		for _, str := range []string{s.Method(), rpcIDStr(s)} {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(str))); str != "" && p >= lo && p <= hi {
				t.Errorf("%s: the summary's %q points into Raw", c.raw, str)
			}
		}
		if n := testing.AllocsPerRun(10, func() { f.summary() }); !raceEnabled && n > c.allocs {
			t.Errorf("%s: summary takes %v allocations, want at most %v", c.raw, n, c.allocs)
		}
	}
}

func rpcIDStr(f *Frame) string {
	if id := f.RPCID(); id != nil {
		return id.Str
	}
	return ""
}
