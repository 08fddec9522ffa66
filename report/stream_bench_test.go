package report

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// BenchmarkReportsStream measures the report path alone (report.Run and
// the SARIF, HTML, JUnit and GitHub writers; the engine decodes and pairs
// frames but runs no rules): b.N exchanges of a
// ~1 KiB hooks/intercept request and its answer, one finding every 20
// exchanges, everything written to io.Discard. peak-heap-MiB is the
// largest heap in use seen (sampled every 4096 exchanges after a GC): it
// must not grow with b.N.
func BenchmarkReportsStream(b *testing.B) {
	pad := strings.Repeat("x", 600)
	var peak uint64
	sample := func() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	html := NewHTML(io.Discard)
	r, err := NewRun(RunConfig{Header: header(), FailOn: tap.Error,
		Writers: []Writer{NewSARIF(io.Discard), html, NewJUnit(io.Discard), NewGitHub(io.Discard, "")}})
	if err != nil {
		b.Fatal(err)
	}
	r.StartInput("bench.capture")
	// An engine with no rules pairs requests and responses (the exchange
	// records); the findings are made up.
	e := tap.NewEngine(tap.Config{Transport: tap.Stdio}, nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		id := fmt.Sprintf("evt-%d", i)
		req := &tap.Frame{Seq: uint64(2*i - 1), Dir: tap.FromHarness, Transport: tap.Stdio, Conn: "c", Time: t0,
			Raw: []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
				`","type":"tool.before","tool":{"input":{"command":"` + pad + `"}}},"capabilities":{"effects":["deny"]}}}`)}
		e.Feed(req)
		r.Fed(e.Conversation(), req, 2*i, nil)
		resp := &tap.Frame{Seq: uint64(2 * i), Dir: tap.FromBackend, Transport: tap.Stdio, Conn: "c", Time: t0.Add(time.Millisecond),
			Raw: []byte(`{"jsonrpc":"2.0","id":"` + id + `","result":{"protocolVersion":"2025-06","effects":[]}}`)}
		e.Feed(resp)
		var fs []tap.Finding
		if i%20 == 0 {
			fs = []tap.Finding{{Check: "BASE-2", Rule: "BASE-2/version", Level: tap.Error, Pointer: "/result/protocolVersion",
				Message: "the successful result carries protocolVersion \"2025-06\"", Seq: resp.Seq, Dir: resp.Dir, Conn: "c", RPCID: `"` + id + `"`}}
		}
		r.Fed(e.Conversation(), resp, 2*i+1, fs)
		if i%4096 == 0 {
			sample()
		}
	}
	r.EndInput(InputEnd{})
	if _, err := r.Close(); err != nil {
		b.Fatal(err)
	}
	sample()
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(b.N*2)/b.Elapsed().Seconds(), "frames/s")
}
