package tap

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/ahp-tap/ahp-tap/internal/norace"
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

// TestSettledExchangesPinNoFrames: a conversation keeps its answered
// exchanges (DefaultKeepAnswered of them) as summaries of a few hundred
// bytes whatever the size of their frames. A summary string left pointing
// into its request's bytes kept the whole request: 60 KiB each here.
func TestSettledExchangesPinNoFrames(t *testing.T) {
	if norace.Run(t) {
		return
	}
	for _, method := range []string{"hooks/intercept", "com.example/custom"} {
		t.Run(method, func(t *testing.T) { settledPinNoFrames(t, method) })
	}
}

// settledPinNoFrames: a method outside the protocol's names (its string a
// slice of the request's bytes) must not keep them either.
func settledPinNoFrames(t *testing.T, method string) {
	const n, size = 300, 60 << 10
	pad := strings.Repeat("x", size)
	e := NewEngine(Config{Transport: Stdio}, nil)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := range n {
		id := fmt.Sprintf("evt-%d", i)
		e.Feed(&Frame{Dir: FromHarness, Transport: Stdio, Raw: []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + method + `","params":{"protocolVersion":"draft","event":{"id":"` + id + `","source":"s","type":"tool.before","pad":"` + pad + `"}}}`)})
		e.Feed(&Frame{Dir: FromBackend, Transport: Stdio, Raw: []byte(`{"jsonrpc":"2.0","id":"` + id + `","result":{"protocolVersion":"draft"}}`)})
	}
	after := heap()
	got := int64(after) - int64(before)
	t.Logf("%d answered exchanges of %d KiB requests hold %d KiB", n, size>>10, got>>10)
	if got > n*size/8 {
		t.Errorf("%d answered exchanges of %d KiB requests hold %d KiB", n, size>>10, got>>10)
	}
	runtime.KeepAlive(e)
}

// TestSettleAllocations: settling an answered exchange keeps its
// summaries, its event's type, id and source, and its method in one
// allocation and one string (two in all), whatever the method; and no
// string it keeps points into either frame's bytes.
func TestSettleAllocations(t *testing.T) {
	for _, method := range []string{"hooks/intercept", "com.example/custom"} {
		req := &Frame{Seq: 1, Dir: FromHarness, Raw: []byte(`{"jsonrpc":"2.0","id":"evt-1","method":"` + method + `","params":{"event":{"id":"evt-1","source":"urn:s","type":"tool.before","n":2}}}`)}
		res := &Frame{Seq: 2, Dir: FromBackend, Raw: []byte(`{"jsonrpc":"2.0","id":"evt-1","result":{}}`)}
		req.Decode()
		res.Decode()
		m := req.Msg.(*Request)
		orig := Exchange{Key: IDKey(m.ID), Method: m.Method, Request: req, Response: res, Event: m.Params.Get("event"), Capabilities: m.Params}
		var x Exchange
		n := testing.AllocsPerRun(10, func() {
			x = orig
			x.settle()
		})
		if !raceEnabled && n > 2 {
			t.Errorf("%s: settle takes %v allocations, want at most 2", method, n)
		}
		if x.Request.Seq != 1 || x.Response.Seq != 2 || x.Method != method || x.Capabilities != nil ||
			x.Request.Method() != method || IDText(x.Request.RPCID()) != `"evt-1"` || IDText(x.Response.RPCID()) != `"evt-1"` {
			t.Fatalf("%s: settled %+v: request %+v response %+v", method, x, x.Request, x.Response)
		}
		if got := string(x.Event.Canonical()); got != `{"id":"evt-1","source":"urn:s","type":"tool.before"}` {
			t.Errorf("%s: settled event %s", method, got)
		}
		for _, f := range []*Frame{req, res} {
			lo, hi := uintptr(unsafe.Pointer(&f.Raw[0])), uintptr(unsafe.Pointer(&f.Raw[len(f.Raw)-1]))
			for _, str := range []string{x.Method, x.Request.Method(), rpcIDStr(x.Request), rpcIDStr(x.Response), x.Event.Get("id").Str, x.Event.Get("source").Str, x.Event.Get("type").Str} {
				if p := uintptr(unsafe.Pointer(unsafe.StringData(str))); p >= lo && p <= hi {
					t.Errorf("%s: the settled exchange's %q points into a frame's bytes", method, str)
				}
			}
		}
	}
}
