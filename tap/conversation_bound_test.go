package tap

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/norace"
)

// TestAnsweredExchangesHoldNoFrames: a long conversation of large requests
// keeps KeepAnswered answered exchanges, but not their frames: live memory
// stays far below the bytes seen (found by bench/soak.sh: 2×1024 kept
// requests of up to 1 MiB held ~450 MiB).
func TestAnsweredExchangesHoldNoFrames(t *testing.T) {
	if norace.Run(t) {
		return
	}
	e := NewEngine(Config{}, nil)
	pad := strings.Repeat("x", 100<<10)
	for i := range 1500 { // 150 MiB of requests
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e%d","source":"urn:t","type":"tool.before","tool":{"input":{"command":"%s"}}}}}`, i, i, pad)
		e.Feed(&Frame{Seq: uint64(2*i + 1), Dir: FromHarness, Raw: []byte(req)})
		e.Feed(&Frame{Seq: uint64(2*i + 2), Dir: FromBackend, Raw: fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"draft","effects":[]}}`, i)})
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if recs := e.Conversation().Records(); len(recs) < DefaultKeepAnswered {
		t.Errorf("Records() = %d, want the last %d answered exchanges kept", len(recs), DefaultKeepAnswered)
	} else if last := recs[len(recs)-1]; last.RPCID != "1499" || last.EventID != "e1499" || last.Method != "hooks/intercept" {
		t.Errorf("last record = %+v, want id 1499, event e1499", last)
	}
	t.Logf("live heap after 1,500 answered 100 KiB requests: %.1f MiB", float64(ms.HeapAlloc)/(1<<20))
	if ms.HeapAlloc > 64<<20 {
		t.Errorf("live heap = %d MiB after 1,500 answered 100 KiB requests, want < 64 MiB (frames must not be kept)", ms.HeapAlloc>>20)
	}
}
