// Command capgen writes a large ahp-tap capture for the report benchmarks
// (bench/reports.sh): a persistent stdio backend answering hooks/intercept
// tool.before requests of about -size bytes, with faults at fixed
// intervals so that every report has findings of several checks: a wrong
// protocolVersion (BASE-2) every -bad-every responses, a stdout banner
// (STDIO-1) every 10*-bad-every exchanges, and one request never answered
// (CORR-2) at the end.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/tap"
)

func main() {
	out := flag.String("o", "", "capture `FILE` to write")
	mb := flag.Int("mb", 1024, "approximate capture size in `MiB`")
	size := flag.Int("size", 1024, "approximate request size in `BYTES`")
	badEvery := flag.Int("bad-every", 500, "one BASE-2 fault every `N` responses")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: capgen -o FILE [-mb N] [-size BYTES]")
		os.Exit(2)
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	enc.Encode(capture.Header{Type: "header", Format: capture.Format, Version: capture.Version, Tool: "capgen",
		Snapshot: "draft", Transport: tap.Stdio, Started: start, Conn: "stdio:1", Lifecycle: "persistent"})
	pad := strings.Repeat("x", max(*size-420, 0))
	var seq uint64
	frame := func(dir tap.Direction, t time.Time, raw string) {
		seq++
		f := &tap.Frame{Seq: seq, Dir: dir, Time: t, Transport: tap.Stdio, Conn: "stdio:1", Raw: []byte(raw), Framing: tap.Framing{Line: true}}
		enc.Encode(capture.FrameRecord(f))
	}
	limit := int64(*mb) << 20
	var written int64
	for i := 1; ; i++ {
		t := start.Add(time.Duration(i) * time.Millisecond)
		id := fmt.Sprintf("evt-%d", i)
		req := `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
			`","source":"urn:uuid:0d8c6a52-3f0e-4d8e-9b1a-2f6b9a7c1e01","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"capgen","version":"1"},` +
			`"session":{"id":"s1","cwd":"/w"},"tool":{"name":"Bash","kind":"shell","input":{"command":"` + pad + `"},"origin":"native"},"call":{"id":"c-` + id + `"},"path":"main"},` +
			`"capabilities":{"effects":["deny"]}}}`
		frame(tap.FromHarness, t, req)
		if written+int64(bw.Buffered()) >= limit {
			break // this last request is never answered: CORR-2
		}
		version := "draft"
		if i%*badEvery == 0 {
			version = "2025-06"
		}
		frame(tap.FromBackend, t.Add(200*time.Microsecond), `{"jsonrpc":"2.0","id":"`+id+`","result":{"protocolVersion":"`+version+`","effects":[]}}`)
		if i%(10**badEvery) == 0 {
			frame(tap.FromBackend, t.Add(300*time.Microsecond), "policy cache warmed")
		}
		if bw.Buffered() > 512<<10 {
			written += int64(bw.Buffered())
			bw.Flush()
		}
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	f.Close()
}
