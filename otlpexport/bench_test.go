package otlpexport

import (
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/otlpexport/otlptest"
	"github.com/ahp-tap/ahp-tap/tap"
)

// BenchmarkWrite is the cost of Write on the audit goroutine, the only
// part of the export that runs there: go test -bench Write ./otlpexport
func BenchmarkWrite(b *testing.B) {
	for _, c := range []struct {
		name string
		hang bool
	}{{"collector-up", false}, {"collector-hanging", true}} {
		b.Run(c.name, func(b *testing.B) {
			rc := otlptest.NewReceiver(b, c.hang)
			x, err := New(Config{Endpoint: rc.URL, ExportTimeout: 100 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			f := finding(2) // with a traceparent
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				x.Write(f)
			}
			b.StopTimer()
			x.Close(200 * time.Millisecond)
			b.ReportMetric(float64(x.Dropped())/float64(b.N), "dropped/op")
		})
	}
}

// BenchmarkThroughput is how many findings a second reach a local
// collector (an OTLP/HTTP receiver decoding every request) when none is
// dropped: go test -bench Throughput ./otlpexport
func BenchmarkThroughput(b *testing.B) {
	rc := otlptest.NewReceiver(b, false)
	x, err := New(Config{Endpoint: rc.URL})
	if err != nil {
		b.Fatal(err)
	}
	f := finding(2)
	b.ResetTimer()
	for range b.N {
		x.WriteWait(f, "s.capture")
	}
	x.Close(time.Minute)
	b.StopTimer()
	if x.Dropped() != 0 || len(rc.Records()) != b.N {
		b.Fatalf("dropped %d, received %d of %d", x.Dropped(), len(rc.Records()), b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "findings/s")
}

// BenchmarkJudged is the cost, on the audit goroutine, of the span of one
// exchange: the watcher sees its request and its answer (the export runs
// on a goroutine of its own): go test -bench Judged ./otlpexport
func BenchmarkJudged(b *testing.B) {
	for _, c := range []struct {
		name string
		hang bool
	}{{"collector-up", false}, {"collector-hanging", true}} {
		b.Run(c.name, func(b *testing.B) {
			rc := otlptest.NewReceiver(b, c.hang)
			x, err := New(Config{Endpoint: rc.URL, ExportTimeout: 100 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			w := x.Watcher()
			req := &tap.Frame{Dir: tap.FromHarness, Time: time.Now(), Transport: tap.Stdio, Conn: "stdio:1",
				Raw: []byte(`{"jsonrpc":"2.0","id":"evt-1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"evt-1","type":"tool.before"}}}`)}
			resp := &tap.Frame{Dir: tap.FromBackend, Time: time.Now(), Transport: tap.Stdio, Conn: "stdio:1",
				Raw: []byte(`{"jsonrpc":"2.0","id":"evt-1","result":{"protocolVersion":"draft","effects":[{"type":"deny","reason":"no"}]}}`)}
			req.Decode()
			resp.Decode()
			ex := &tap.Exchange{Method: "hooks/intercept", Request: req, Event: req.Tree.Path("params", "event"), Outcome: tap.OutcomeDeny}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w.Judged(req, ex)
				w.Judged(resp, ex)
			}
			b.StopTimer()
			x.Close(200 * time.Millisecond)
			b.ReportMetric(float64(x.SpansDropped())/float64(b.N), "dropped/op")
		})
	}
}
