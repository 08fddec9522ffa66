package httpproxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkReverseExchange drives 1 KiB hooks/intercept POSTs through a
// reverse tap (every rule on, a capture off) on one keep-alive connection
// from a raw-socket harness to a net/http backend, and reports allocations
// per exchange (all goroutines: forwarding, audit and backend; the direct
// case is the backend and the harness alone, to subtract). Timing on a
// shared machine is noisy; bench/http.sh is the throughput measurement.
//
//	go test ./httpproxy -run - -bench ReverseExchange -benchmem
func BenchmarkReverseExchange(b *testing.B) {
	// The backend answers each request with its own id, as a conforming
	// one does (answering every request as "e1" made every answer but one
	// unsolicited, a pathological audit this benchmark did not mean).
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ ID json.RawMessage }
		json.NewDecoder(r.Body).Decode(&req)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"draft","effects":[]}}`, req.ID)
	}))
	defer up.Close()
	b.Run("direct", func(b *testing.B) { benchExchanges(b, up.URL) })
	b.Run("tap", func(b *testing.B) { benchExchanges(b, startTap(b, Config{Upstream: mustURL(b, up.URL)}).url) })
	// With a known deadline (--timeout, a registration's timeoutMs): each
	// exchange arms a timer to hand its request over alone should it
	// still be unanswered at the deadline (issue 21 item 8).
	b.Run("tap-deadline", func(b *testing.B) {
		benchExchanges(b, startTap(b, Config{Upstream: mustURL(b, up.URL), Probe: 5 * time.Second}).url)
	})
}

func benchExchanges(b *testing.B, target string) {
	c, err := net.Dial("tcp", strings.TrimPrefix(target, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	pad := strings.Repeat("x", 1024-len(interceptBody)-12)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		body := strings.Replace(interceptBody, `"e1"}}}`, fmt.Sprintf(`"e1","p":"%s"}}}`, pad), 1)
		body = strings.ReplaceAll(body, `"e1"`, fmt.Sprintf(`"e%d"`, i))
		fmt.Fprintf(c, "POST /agent-hooks HTTP/1.1\r\nHost: tap\r\nContent-Type: application/json\r\nAuthorization: Bearer bench-token-0123456789\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
