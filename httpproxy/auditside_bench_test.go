package httpproxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/linkconf"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/tap"
)

// benchRegistration is bench/lib.sh's http_registration: one HTTP hook
// subscribed to tool.before intercepts with a 5 s deadline.
const benchRegistration = `{"protocolVersion":"draft","hooks":[{"id":"com.example.bench","transport":{"type":"http","url":"http://127.0.0.1:9804/agent-hooks"},
 "subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"body"}}]}]}`

// benchInterceptBody is bench/lib.sh's post_lua body for id, padded to
// 1024 bytes as wrk sends it.
func benchInterceptBody(id string) []byte {
	body := func(pad string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
			`","source":"https://harness.example/bench","type":"tool.before","time":"2026-12-02T09:00:00Z",` +
			`"harness":{"name":"bench-harness","version":"1.0.0"},"session":{"id":"sess-bench"},` +
			`"tool":{"name":"read_file","kind":"file_read","input":{"path":"README.md","note":"` + pad + `"},"origin":"native"},` +
			`"call":{"id":"call-` + id + `"},"path":"example"},"capabilities":{"effects":["deny"]}}}`
	}
	return []byte(body(strings.Repeat("x", 1024-len(body("")))))
}

// An auditSide is the audit side of `ahp-tap http` as bench/http.sh runs
// it (a registration and its hook, --log, --metrics; default flags
// otherwise): the session built as httptap builds it, its way out
// (package output), the auditor with the clock and the deadline probe,
// and a relay proxy whose exchanges feed it. The benchmark holds the
// audit goroutine while it queues a batch (AuditorConfig.Taken) and
// learns when the batch is judged (SessionConfig.Watch), so that the
// timed part is the audit goroutine's work alone.
type auditSide struct {
	p      *Proxy
	aud    *tap.Auditor
	out    *output.Output
	log    string
	gate   atomic.Pointer[chan struct{}] // the audit goroutine waits on it at the next frame taken
	judged atomic.Int64                  // frames judged so far
	want   atomic.Int64                  // judged count at which done gets a value
	done   chan struct{}
	bad    atomic.Pointer[tap.Finding] // a finding at Warn or above: the traffic is not the normal path
	seq    int
	held   chan struct{} // drop: holds the audit goroutine until close
}

func (a *auditSide) Judged(*tap.Frame, *tap.Exchange) {
	if a.judged.Add(1) == a.want.Load() {
		a.done <- struct{}{}
	}
}

// newAuditSide builds the audit side; with drop, its auditor drops every
// exchange instead (a queue of one, held for good): what making the
// exchanges costs alone.
func newAuditSide(b *testing.B, drop bool) *auditSide {
	dir := b.TempDir()
	reg := filepath.Join(dir, "registration.json")
	if err := os.WriteFile(reg, []byte(benchRegistration), 0o600); err != nil {
		b.Fatal(err)
	}
	lc, err := linkconf.Load(linkconf.Files{Registration: reg, Hook: "com.example.bench"})
	if err != nil {
		b.Fatal(err)
	}
	lc.Config.Transport = tap.HTTP
	a := &auditSide{log: filepath.Join(dir, "violations.log"), done: make(chan struct{}, 1)}
	var aud *tap.Auditor
	metrics := NewMetrics(func() uint64 { return aud.Dropped() })
	check := tap.SinkFunc(func(f tap.Finding) {
		if f.Level >= tap.Warn {
			a.bad.CompareAndSwap(nil, &f)
		}
	})
	a.out, err = output.Open(output.Config{Name: "http", Log: a.log, Sinks: []tap.Sink{metrics.Sink(), check}, SummaryLimit: 1})
	if err != nil {
		b.Fatal(err)
	}
	sc := a.out.SessionConfig(tap.SessionConfig{Config: lc.Config})
	if sc.Watch != nil || sc.Recorder != nil {
		b.Fatal("the default way out has a watcher or a recorder: the benchmark's Watch would not be the only one")
	}
	sc.Watch = a
	s := lc.NewSession(sc)
	var p atomic.Pointer[Proxy]
	queue := 16384
	if drop {
		queue = 1
		a.held = make(chan struct{})
		a.gate.Store(&a.held)
	}
	aud = s.Audit(tap.AuditorConfig{Queue: queue, Clock: func(now time.Time) time.Time { return p.Load().SafeClock(now) },
		Taken: func(*tap.Frame) {
			if g := a.gate.Swap(nil); g != nil {
				<-*g
			}
		}})
	a.aud = aud
	a.p, err = New(Config{Upstream: mustURL(b, "http://127.0.0.1:9801"), Auditor: aud, Metrics: metrics, Probe: s.Config().MinDeadline()})
	if err != nil {
		b.Fatal(err)
	}
	p.Store(a.p)
	return a
}

// exchange makes and finishes one 1 KiB intercept exchange as the relay
// does, on one of 16 connections (wrk -c16), each with its own id.
func (a *auditSide) exchange(b *testing.B, rq *head) {
	a.seq++
	id := fmt.Sprintf("000000-t%d-%09d", a.seq%2+1, a.seq)
	body := benchInterceptBody(id)
	answer := []byte(`{"jsonrpc":"2.0","id":"` + id + `","result":{"protocolVersion":"draft","effects":[]}}`)
	rs := parsedHead(b, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Fri, 04 Dec 2026 19:00:00 GMT\r\nContent-Length: %d\r\n\r\n", len(answer)), false)
	x, _ := a.p.relayExchange(rq, fmt.Sprintf("http-conn:%d", a.seq%16+1))
	x.copyBytes(false, body)
	x.requestEnded()
	x.responseHead(rs.status, rs.hold(), rs.lengthHint())
	x.copyBytes(true, answer)
	x.responseEnded()
	x.finish()
}

// batch queues n exchanges behind a held audit goroutine, off the clock,
// then times the audit taking and judging them.
func (a *auditSide) batch(b *testing.B, rq *head, n int) {
	b.StopTimer()
	gate := make(chan struct{})
	a.gate.Store(&gate)
	a.want.Store(a.judged.Load() + 2*int64(n))
	for range n {
		a.exchange(b, rq)
	}
	b.StartTimer()
	close(gate)
	<-a.done
}

func (a *auditSide) close(b *testing.B) {
	if a.held != nil {
		close(a.held)
	}
	a.aud.Close()
	if err := a.out.Close(time.Now().Add(time.Second)); err != nil {
		b.Fatal(err)
	}
	if a.held != nil {
		return
	}
	if f := a.bad.Load(); f != nil {
		b.Fatalf("benchmark traffic is not conforming: %v", *f)
	}
	if d := a.aud.Dropped(); d != 0 {
		b.Fatalf("%d frames dropped", d)
	}
}

// BenchmarkAuditSide measures the audit goroutine's whole work per 1 KiB
// intercept exchange of `ahp-tap http` with bench/http.sh's flags: taking
// the two frames off the queue (the deadline timer and the clock
// included), building and redacting their envelopes and searching their
// bodies (Item.Prepare), the engine with every rule and the registration,
// and the way out (log, metrics). One op is one exchange. The exchanges
// are made by the relay's code a batch at a time, off the clock, while
// the audit goroutine is held. Its instructions per exchange, which load
// does not move, come from bench/auditinstr.sh.
//
// "make" makes the exchanges the same way, on the clock, and drops them:
// subtracted from "audit" under cachegrind, it leaves the audit side.
//
//	go test ./httpproxy -run - -bench AuditSide -benchmem
func BenchmarkAuditSide(b *testing.B) {
	rq := parsedHead(b, envRequest, true)
	b.Run("audit", func(b *testing.B) {
		a := newAuditSide(b, false)
		const batch = 512
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += batch {
			a.batch(b, rq, min(batch, b.N-i))
		}
		b.StopTimer()
		a.close(b)
	})
	b.Run("make", func(b *testing.B) {
		a := newAuditSide(b, true)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			a.exchange(b, rq)
		}
		b.StopTimer()
		a.close(b)
	})
}
