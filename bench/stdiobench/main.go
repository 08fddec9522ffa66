// Command stdiobench measures request/response round trips of 1 KiB AHP
// hooks/intercept requests over stdio: latency one request at a time (p50,
// p99) and throughput with many requests in flight. It starts the command
// after "--" as the backend (directly, through socat, or through ahp-tap)
// and talks to it over its stdin and stdout, as a harness does.
//
// With -backend it is instead the minimal backend: it answers every request
// line with an empty-effects result carrying the request's id.
//
//	stdiobench -name direct -- stdiobench -backend
//	stdiobench -name socat -- socat STDIO EXEC:'stdiobench -backend'
//	stdiobench -name ahp-tap -- ahp-tap stdio --registration r.json --hook ID -- stdiobench -backend
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/vocab"
)

func main() {
	backend := flag.Bool("backend", false, "be the minimal backend instead of the driver")
	name := flag.String("name", "", "name of this configuration in the output")
	size := flag.Int("size", 1024, "request size in bytes")
	latencyN := flag.Int("latency-requests", 20000, "requests for the one-at-a-time latency run")
	throughputN := flag.Int("throughput-requests", 200000, "requests for the throughput run")
	inflight := flag.Int("inflight", 32, "requests in flight in the throughput run")
	format := flag.String("format", "text", "text or json")
	summarize := flag.String("summarize", "", "instead of measuring, print the median of each configuration in this JSON Lines `FILE` of results, against socat")
	auditLog := flag.String("audit-log", "", "ahp-tap's violation log `PATH`: after each phase, count the frames it says it did not audit (TAP-1), then empty it")
	rate := flag.Float64("rate", 0, "instead of the latency and throughput runs, offer this many requests per second (open loop) for -duration and report the share audited")
	duration := flag.Duration("duration", 10*time.Second, "how long to offer -rate")
	flag.Parse()
	if *summarize != "" {
		if err := summary(*summarize, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "stdiobench:", err)
			os.Exit(1)
		}
		return
	}
	if *backend {
		if err := serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "stdiobench backend:", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: stdiobench [flags] -- BACKEND COMMAND...")
		os.Exit(2)
	}
	if *rate > 0 {
		r, err := paced(flag.Args(), *size, *rate, *duration, *auditLog)
		if err != nil {
			fmt.Fprintln(os.Stderr, "stdiobench:", err)
			os.Exit(1)
		}
		r.Name = *name
		if *format == "json" {
			json.NewEncoder(os.Stdout).Encode(r)
		} else {
			fmt.Println(r)
		}
		return
	}
	r, err := measure(flag.Args(), *size, *latencyN, *throughputN, *inflight, *auditLog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiobench:", err)
		os.Exit(1)
	}
	r.Name = *name
	if *format == "json" {
		json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	fmt.Printf("%-22s p50 %8.1f µs   p99 %8.1f µs   throughput %9.0f req/s (%d in flight)",
		r.Name, r.P50us, r.P99us, r.Throughput, r.Inflight)
	if r.LatencyNotAudited >= 0 {
		fmt.Printf("   not audited %.1f%% / %.1f%%", pct(r.LatencyNotAudited, r.LatencyFrames), pct(r.ThroughputNotAudited, r.ThroughputFrames))
	}
	fmt.Println()
}

// Result is one configuration's figures.
type Result struct {
	Name       string  `json:"name"`
	P50us      float64 `json:"p50_us"`
	P99us      float64 `json:"p99_us"`
	Throughput float64 `json:"throughput_rps"`
	Inflight   int     `json:"inflight"`
	Size       int     `json:"request_bytes"`
	// Frames and frames not audited (-1: unknown) in each phase.
	LatencyFrames        int   `json:"latency_frames"`
	LatencyNotAudited    int64 `json:"latency_not_audited"`
	ThroughputFrames     int   `json:"throughput_frames"`
	ThroughputNotAudited int64 `json:"throughput_not_audited"`
}

func pct(n int64, of int) float64 { return 100 * float64(n) / float64(max(of, 1)) }

// notAudited sums the "N frames not audited" of the TAP-1 records in an
// ahp-tap violation log, then empties it; -1 without a log.
func notAudited(path string) int64 {
	if path == "" {
		return -1
	}
	data, _ := os.ReadFile(path)
	var n int64
	for _, l := range bytes.Split(data, []byte("\n")) {
		var rec struct{ Check, Message string }
		if json.Unmarshal(l, &rec) != nil || rec.Check != string(vocab.Tap1) {
			continue
		}
		var k int64
		if _, err := fmt.Sscanf(rec.Message, "%d frames not audited", &k); err == nil {
			n += k
		}
	}
	os.WriteFile(path, nil, 0o600)
	return n
}

// summary prints the median figures of each configuration in a JSON Lines
// file of Results, in first-seen order, with ratios to socat's and the
// issue's goals (p50 ≤ 1.5×, p99 ≤ 2×, throughput ≥ 0.5× socat).
func summary(path string, w io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	byName := map[string][]Result{}
	var order []string
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r Result
		if err := json.Unmarshal(l, &r); err != nil {
			return err
		}
		if _, ok := byName[r.Name]; !ok {
			order = append(order, r.Name)
		}
		byName[r.Name] = append(byName[r.Name], r)
	}
	med := func(rs []Result, f func(Result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	type row struct{ p50, p99, thr, naLat, naThr float64 }
	rows := map[string]row{}
	for _, n := range order {
		rs := byName[n]
		rows[n] = row{med(rs, func(r Result) float64 { return r.P50us }), med(rs, func(r Result) float64 { return r.P99us }),
			med(rs, func(r Result) float64 { return r.Throughput }),
			med(rs, func(r Result) float64 {
				if r.LatencyNotAudited < 0 {
					return -1
				}
				return pct(r.LatencyNotAudited, r.LatencyFrames)
			}),
			med(rs, func(r Result) float64 {
				if r.ThroughputNotAudited < 0 {
					return -1
				}
				return pct(r.ThroughputNotAudited, r.ThroughputFrames)
			})}
	}
	s, hasSocat := rows["socat"]
	fmt.Fprintf(w, "| configuration | runs | p50 µs | p99 µs | req/s (%d in flight) | vs socat: p50 / p99 / req/s | frames not audited: one at a time / in flight |\n", byName[order[0]][0].Inflight)
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|\n")
	for _, n := range order {
		r := rows[n]
		ratio := ""
		if hasSocat && n != "socat" {
			ratio = fmt.Sprintf("%.2f× / %.2f× / %.2f×", r.p50/s.p50, r.p99/s.p99, r.thr/s.thr)
		}
		na := ""
		if r.naLat >= 0 {
			na = fmt.Sprintf("%.1f%% / %.1f%%", r.naLat, r.naThr)
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %s | %s |\n", n, len(byName[n]), r.p50, r.p99, r.thr, ratio, na)
	}
	return nil
}

// serve is the minimal backend: for each line, find the id and answer.
func serve(in io.Reader, out io.Writer) error {
	br := bufio.NewReaderSize(in, 1<<16)
	bw := bufio.NewWriterSize(out, 1<<16)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			id := extractID(line)
			bw.WriteString(`{"jsonrpc":"2.0","id":`)
			bw.Write(id)
			bw.WriteString(`,"result":{"protocolVersion":"draft","effects":[]}}` + "\n")
			if br.Buffered() == 0 {
				if err := bw.Flush(); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			return bw.Flush()
		}
		if err != nil {
			return err
		}
	}
}

// extractID returns the JSON text of the top-level "id" member of a request
// the driver wrote ("id" is its second member, a string).
func extractID(line []byte) []byte {
	i := bytes.Index(line, []byte(`"id":"`))
	if i < 0 {
		return []byte("null")
	}
	rest := line[i+5:]
	j := bytes.IndexByte(rest[1:], '"')
	return rest[:j+2]
}

// request builds a hooks/intercept request of exactly size bytes (with its
// newline) whose JSON-RPC id and event id are id.
func request(id string, size int) []byte {
	head := `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
		`","source":"urn:example:stdiobench","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"stdiobench","version":"1"},` +
		`"session":{"id":"sess_bench"},"tool":{"name":"Bash","kind":"shell","origin":"native","input":{"command":"`
	tail := `"}},"call":{"id":"call_` + id + `"},"path":"native"},"capabilities":{"effects":["deny"]}}}` + "\n"
	pad := size - len(head) - len(tail)
	if pad < 0 {
		pad = 0
	}
	return []byte(head + strings.Repeat("x", pad) + tail)
}

type link struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func start(argv []string) (*link, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &link{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}, nil
}

func (l *link) close() error {
	l.in.Close()
	io.Copy(io.Discard, l.out)
	return l.cmd.Wait()
}

func measure(argv []string, size, latencyN, throughputN, inflight int, auditLog string) (*Result, error) {
	r := &Result{Inflight: inflight, Size: size, LatencyFrames: 2 * (latencyN + 1000), ThroughputFrames: 2 * throughputN}
	notAudited(auditLog) // start from an empty log
	// Latency: one request at a time, after a warm-up.
	l, err := start(argv)
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, latencyN)
	for i := -1000; i < latencyN; i++ {
		req := request(fmt.Sprintf("lat_%d", i+1000), size)
		t0 := time.Now()
		if _, err := l.in.Write(req); err != nil {
			return nil, err
		}
		if _, err := l.out.ReadSlice('\n'); err != nil {
			return nil, fmt.Errorf("reading response %d: %w", i, err)
		}
		if i >= 0 {
			lat = append(lat, time.Since(t0))
		}
	}
	if err := l.close(); err != nil {
		return nil, fmt.Errorf("latency run: backend: %w", err)
	}
	r.LatencyNotAudited = notAudited(auditLog)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r.P50us = float64(lat[len(lat)/2].Nanoseconds()) / 1e3
	r.P99us = float64(lat[len(lat)*99/100].Nanoseconds()) / 1e3

	// Throughput: keep `inflight` requests outstanding.
	l, err = start(argv)
	if err != nil {
		return nil, err
	}
	reqs := make([][]byte, throughputN)
	for i := range reqs {
		reqs[i] = request(fmt.Sprintf("thr_%d", i), size)
	}
	credits := make(chan struct{}, inflight)
	for range inflight {
		credits <- struct{}{}
	}
	werr := make(chan error, 1)
	t0 := time.Now()
	go func() {
		for _, req := range reqs {
			<-credits
			if _, err := l.in.Write(req); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	for i := 0; i < throughputN; i++ {
		if _, err := l.out.ReadSlice('\n'); err != nil {
			return nil, fmt.Errorf("reading response %d: %w", i, err)
		}
		credits <- struct{}{}
	}
	elapsed := time.Since(t0)
	if err := <-werr; err != nil {
		return nil, err
	}
	if err := l.close(); err != nil {
		return nil, fmt.Errorf("throughput run: backend: %w", err)
	}
	r.ThroughputNotAudited = notAudited(auditLog)
	r.Throughput = float64(throughputN) / elapsed.Seconds()
	return r, nil
}

// RateResult is the outcome of an open-loop run (-rate).
type RateResult struct {
	Name       string  `json:"name"`
	Rate       float64 `json:"offered_rps"`
	Seconds    float64 `json:"seconds"`
	Sent       int     `json:"sent"`
	Achieved   float64 `json:"achieved_rps"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	Frames     int     `json:"frames"`
	NotAudited int64   `json:"not_audited"` // -1: unknown (no -audit-log)
}

func (r *RateResult) String() string {
	s := fmt.Sprintf("%s offered %.0f intercepts/s for %.0f s: %d sent, achieved %.0f/s, latency p50 %.2f ms p99 %.2f ms",
		r.Name, r.Rate, r.Seconds, r.Sent, r.Achieved, r.P50ms, r.P99ms)
	if r.NotAudited >= 0 {
		s += fmt.Sprintf("; %d frames, %d not audited, %.2f%% audited", r.Frames, r.NotAudited, 100-pct(r.NotAudited, r.Frames))
	}
	return s
}

// paced offers rate requests per second for d, each written when it falls
// due (a burst when the writer is late), and reads the answers; latency
// counts from when a request was due. The share audited comes from the
// TAP-1 records of auditLog once the backend has exited.
func paced(argv []string, size int, rate float64, d time.Duration, auditLog string) (*RateResult, error) {
	notAudited(auditLog) // start from an empty log
	n := int(rate * d.Seconds())
	reqs := make([][]byte, n)
	for i := range reqs {
		reqs[i] = request(fmt.Sprintf("rate_%d", i), size)
	}
	l, err := start(argv)
	if err != nil {
		return nil, err
	}
	interval := time.Duration(float64(time.Second) / rate)
	t0 := time.Now()
	werr := make(chan error, 1)
	go func() {
		for i, req := range reqs {
			if w := time.Until(t0.Add(time.Duration(i) * interval)); w > 0 {
				time.Sleep(w)
			}
			if _, err := l.in.Write(req); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		line, err := l.out.ReadSlice('\n')
		if err != nil {
			return nil, fmt.Errorf("reading response %d: %w", i, err)
		}
		now := time.Now()
		if j := bytes.Index(line, []byte(`"rate_`)); j >= 0 {
			var k int
			if _, err := fmt.Sscanf(string(line[j+6:]), "%d", &k); err == nil && k < n {
				lat = append(lat, now.Sub(t0.Add(time.Duration(k)*interval)))
			}
		}
	}
	elapsed := time.Since(t0)
	if err := <-werr; err != nil {
		return nil, err
	}
	if err := l.close(); err != nil {
		return nil, fmt.Errorf("paced run: backend: %w", err)
	}
	r := &RateResult{Rate: rate, Seconds: d.Seconds(), Sent: n, Achieved: float64(n) / elapsed.Seconds(), Frames: 2 * n,
		NotAudited: notAudited(auditLog)}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		r.P50ms = float64(lat[len(lat)/2]) / 1e6
		r.P99ms = float64(lat[len(lat)*99/100]) / 1e6
	}
	return r, nil
}
