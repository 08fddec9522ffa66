package httpproxy

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// The heads and bodies of a 1 KiB intercept exchange as the relay reads
// them (bench/lib.sh's wrk request and a short answer).
var (
	envRequest  = "POST /agent-hooks HTTP/1.1\r\nHost: 127.0.0.1:9823\r\nAuthorization: Bearer bench-token-0123456789\r\nContent-Type: application/json\r\nContent-Length: 1024\r\n\r\n"
	envResponse = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Fri, 04 Dec 2026 19:00:00 GMT\r\nContent-Length: 96\r\n\r\n"
	envBody     = []byte(`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"x":"` + strings.Repeat("x", 1024-72) + `"}}`)
	envAnswer   = bytes.Repeat([]byte("y"), 96)
)

// BenchmarkEnvelope measures what auditing an exchange costs outside the
// engine, on each side (issue 27 goals 2 and 4). "forwarding" is the
// forwarding goroutine's share: the envelope kept, credentials learnt, the
// audit copies made, finish handing the frames over (to a queue that is
// full, so that nothing reaches the engine). "audit" is the audit
// goroutine's before the engine sees the two frames (their Item.Prepare:
// envelopes built and redacted, bodies searched). bench/pacedcpu.sh
// measures the whole tap.
//
//	go test ./httpproxy -run - -bench Envelope -benchmem
func BenchmarkEnvelope(b *testing.B) {
	gate := make(chan struct{})
	aud := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.HTTP},
		Rules: ruleList{heldRule{gate, new(atomic.Int64), new(atomic.Int64)}}}).Audit(tap.AuditorConfig{Queue: 1})
	b.Cleanup(func() { close(gate); aud.Close() })
	p, err := New(Config{Upstream: mustURL(b, "http://127.0.0.1:9821"), Auditor: aud})
	if err != nil {
		b.Fatal(err)
	}
	rq, rs := parsedHead(b, envRequest, true), parsedHead(b, envResponse, false)
	next := func() *exchange {
		x, _ := p.relayExchange(rq, "http-conn:1")
		x.copyBytes(false, envBody)
		x.requestEnded()
		x.responseHead(rs.status, rs.hold(), rs.lengthHint())
		x.copyBytes(true, envAnswer)
		x.responseEnded()
		return x
	}
	b.Run("forwarding", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			next().finish()
		}
	})
	b.Run("audit", func(b *testing.B) {
		// The exchanges are made a batch at a time, off the clock: the
		// audit takes exchanges made a little earlier, as in the tap.
		const batch = 1024
		xs := make([]*exchange, 0, batch)
		b.ReportAllocs()
		for i := 0; i < b.N; i += batch {
			b.StopTimer()
			xs = xs[:0]
			for range min(batch, b.N-i) {
				xs = append(xs, next())
			}
			b.StartTimer()
			for _, x := range xs {
				x.prepareRequest(&tap.Frame{Raw: x.req.buf})
				x.prepareResponse(&tap.Frame{Raw: x.resp.buf})
			}
		}
	})
}
