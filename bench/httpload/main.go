// Command httpload drives the HTTP load of issue 10 items 2 and 3 against
// ahp-tap http (or anything else on the path to its backend).
//
// It has three modes:
//
//	httpload -backend ADDR
//	    a backend that streams each request body (never holds it), hashes
//	    it, and answers a no-effect hooks/intercept result carrying the
//	    request's JSON-RPC id, with X-Got: "LENGTH SHA256" of the body.
//	httpload -url URL -clients N -size BYTES [-chunked]
//	    N concurrent clients each POST one BYTES-long hooks/intercept body
//	    (Content-Length, or chunked with -chunked); every body is checked
//	    against the backend's X-Got and every answer's id against the
//	    request's. Exit status 1 when any failed.
//	httpload -url URL -rate R -duration D [-size BYTES] [-conns K] [-metrics URL]
//	    open loop: R requests/s for D, each sent at its scheduled time (a
//	    late request counts its latency from when it was due), on at most
//	    K keep-alive connections. With -metrics (the tap's --metrics
//	    address) it reads ahp_tap_audit_dropped_total, ahp_tap_audit_cut_total
//	    and ahp_tap_http_requests_total before and after, and reports the
//	    share of frames audited.
//
// -format json prints one JSON object instead of a line of text.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	backend := flag.String("backend", "", "be the backend, listening on `ADDR`")
	target := flag.String("url", "", "POST to `URL`")
	clients := flag.Int("clients", 0, "concurrent clients, one body each (closed-loop mode)")
	size := flag.Int64("size", 1024, "body size in `BYTES`")
	chunked := flag.Bool("chunked", false, "send bodies chunked (no Content-Length)")
	rate := flag.Float64("rate", 0, "requests per second (open-loop mode)")
	duration := flag.Duration("duration", 10*time.Second, "how long to offer -rate")
	conns := flag.Int("conns", 256, "at most `K` connections (open-loop mode)")
	metrics := flag.String("metrics", "", "the tap's metrics `URL` (http://ADDR/metrics)")
	format := flag.String("format", "text", "text or json")
	flag.Parse()
	var (
		res any
		err error
	)
	switch {
	case *backend != "":
		err = serveBackend(*backend)
	case *target != "" && *clients > 0:
		res, err = concurrent(*target, *clients, *size, *chunked)
	case *target != "" && *rate > 0:
		res, err = openLoop(*target, *rate, *duration, *size, *conns, *metrics)
	default:
		fmt.Fprintln(os.Stderr, "usage: httpload -backend ADDR | -url URL (-clients N | -rate R) [flags]")
		os.Exit(2)
	}
	if res != nil {
		if *format == "json" {
			json.NewEncoder(os.Stdout).Encode(res)
		} else {
			fmt.Println(res)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpload:", err)
		os.Exit(1)
	}
}

// serveBackend streams each body through a hash.
func serveBackend(addr string) error {
	key := []byte(`"id":"`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		br := bufio.NewReaderSize(r.Body, 4<<10)
		head, _ := br.Peek(4 << 10)
		id := []byte("unknown")
		if i := bytes.Index(head, key); i >= 0 {
			rest := head[i+len(key):]
			if j := bytes.IndexByte(rest, '"'); j >= 0 {
				id = bytes.Clone(rest[:j])
			}
		}
		sum := sha256.New()
		n, err := io.Copy(sum, br)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Got", strconv.FormatInt(n, 10)+" "+hex.EncodeToString(sum.Sum(nil)))
		out := make([]byte, 0, 128)
		out = append(out, `{"jsonrpc":"2.0","id":"`...)
		out = append(out, id...)
		out = append(out, `","result":{"protocolVersion":"draft","effects":[]}}`...)
		w.Write(out)
	})
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: time.Minute}
	return srv.ListenAndServe()
}

// body is a hooks/intercept request of exactly size bytes whose id is id,
// generated as it is read (a 16 MiB body is never held), hashed on the way.
type body struct {
	head, tail []byte
	pad, off   int64 // padding bytes, bytes read so far
	size       int64
	sum        hash.Hash
}

func newBody(id string, size int64) *body {
	head := []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
		`","source":"urn:example:httpload","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"httpload","version":"1"},` +
		`"session":{"id":"sess_load"},"tool":{"name":"Bash","kind":"shell","origin":"native","input":{"command":"`)
	tail := []byte(`"}},"call":{"id":"call_` + id + `"},"path":"native"},"capabilities":{"effects":["deny"]}}}`)
	pad := max(size-int64(len(head)+len(tail)), 0)
	return &body{head: head, tail: tail, pad: pad, size: int64(len(head)+len(tail)) + pad, sum: sha256.New()}
}

var padding = bytes.Repeat([]byte("x"), 64<<10)

func (b *body) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && b.off < b.size {
		var src []byte
		switch h, pe := int64(len(b.head)), int64(len(b.head))+b.pad; {
		case b.off < h:
			src = b.head[b.off:]
		case b.off < pe:
			src = padding[:min(int64(len(padding)), pe-b.off)]
		default:
			src = b.tail[b.off-pe:]
		}
		k := copy(p[n:], src)
		n += k
		b.off += int64(k)
	}
	b.sum.Write(p[:n])
	return n, nil
}

func (b *body) want() string {
	return strconv.FormatInt(b.size, 10) + " " + hex.EncodeToString(b.sum.Sum(nil))
}

// ConcurrentResult is the closed-loop mode's outcome.
type ConcurrentResult struct {
	Clients  int     `json:"clients"`
	Size     int64   `json:"size"`
	Chunked  bool    `json:"chunked"`
	OK       int64   `json:"ok"`
	Failed   int64   `json:"failed"`
	Seconds  float64 `json:"seconds"`
	FirstErr string  `json:"first_error,omitempty"`
}

func (r *ConcurrentResult) String() string {
	framing := "Content-Length"
	if r.Chunked {
		framing = "chunked"
	}
	s := fmt.Sprintf("%d clients × %d bytes (%s): %d verified, %d failed, %.1f s", r.Clients, r.Size, framing, r.OK, r.Failed, r.Seconds)
	if r.FirstErr != "" {
		s += " (first error: " + r.FirstErr + ")"
	}
	return s
}

func concurrent(target string, clients int, size int64, chunked bool) (*ConcurrentResult, error) {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: clients,
		DialContext: (&net.Dialer{Timeout: time.Minute}).DialContext}
	c := &http.Client{Transport: tr}
	r := &ConcurrentResult{Clients: clients, Size: size, Chunked: chunked}
	var ok, failed atomic.Int64
	var once sync.Once
	fail := func(err error) {
		failed.Add(1)
		once.Do(func() { r.FirstErr = err.Error() })
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	t0 := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("c%d", i)
			b := newBody(id, size)
			var rd io.Reader = b
			if chunked {
				rd = struct{ io.Reader }{b}
			}
			req, err := http.NewRequest("POST", target, rd)
			if err != nil {
				fail(err)
				return
			}
			if !chunked {
				req.ContentLength = b.size
			}
			req.Header.Set("Content-Type", "application/json")
			<-start
			resp, err := c.Do(req)
			if err != nil {
				fail(err)
				return
			}
			out, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case err != nil:
				fail(err)
			case resp.StatusCode != 200:
				fail(fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(out)))
			case resp.Header.Get("X-Got") != b.want():
				fail(fmt.Errorf("client %s: backend got %q, sent %q", id, resp.Header.Get("X-Got"), b.want()))
			case !bytes.Contains(out, []byte(`"id":"`+id+`"`)):
				fail(fmt.Errorf("client %s: answer %q is not for its request", id, out))
			default:
				ok.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	r.Seconds = time.Since(t0).Seconds()
	r.OK, r.Failed = ok.Load(), failed.Load()
	tr.CloseIdleConnections()
	if r.Failed > 0 {
		return r, fmt.Errorf("%d of %d requests failed", r.Failed, clients)
	}
	return r, nil
}

// RateResult is the open-loop mode's outcome.
type RateResult struct {
	Rate     float64 `json:"offered_rps"`
	Seconds  float64 `json:"seconds"`
	Sent     int64   `json:"sent"`
	OK       int64   `json:"ok"`
	Failed   int64   `json:"failed"`
	Achieved float64 `json:"achieved_rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	Frames   int64   `json:"frames"`  // 2 per exchange answered 200 (request and response), from the tap's metrics; -1 without
	Dropped  int64   `json:"dropped"` // frames and notes the audit dropped
	Cut      int64   `json:"cut"`     // bodies audited only as a prefix
	Audited  float64 `json:"audited"` // share of frames audited whole, %
	FirstErr string  `json:"first_error,omitempty"`
}

func (r *RateResult) String() string {
	s := fmt.Sprintf("offered %.0f req/s for %.0f s: %d sent, %d ok, %d failed, achieved %.0f req/s, latency p50 %.2f ms p99 %.2f ms",
		r.Rate, r.Seconds, r.Sent, r.OK, r.Failed, r.Achieved, r.P50ms, r.P99ms)
	if r.Frames >= 0 {
		s += fmt.Sprintf("; audit: %d frames, %d dropped, %d cut, %.2f%% audited", r.Frames, r.Dropped, r.Cut, r.Audited)
	}
	if r.FirstErr != "" {
		s += " (first error: " + r.FirstErr + ")"
	}
	return s
}

func openLoop(target string, rate float64, d time.Duration, size int64, conns int, metricsURL string) (*RateResult, error) {
	r := &RateResult{Rate: rate, Seconds: d.Seconds(), Frames: -1}
	before, err := scrape(metricsURL)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	c := &http.Client{Transport: tr}
	// Bodies are built before the clock starts: the load generator should
	// spend its CPU on sending.
	n := int(rate * d.Seconds())
	bodies := make([][]byte, n)
	for i := range bodies {
		b, _ := io.ReadAll(newBody("q"+strconv.Itoa(i), size))
		bodies[i] = b
	}
	lat := make([]time.Duration, n)
	var ok, failed atomic.Int64
	var once sync.Once
	fail := func(err error) {
		failed.Add(1)
		once.Do(func() { r.FirstErr = err.Error() })
	}
	due := make(chan int, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	// Workers take requests as they fall due; at most conns at once. A
	// request that waits for a worker is late, and its latency counts from
	// when it was due (no coordinated omission).
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range due {
				at := t0.Add(time.Duration(i) * interval)
				if w := time.Until(at); w > 0 {
					time.Sleep(w)
				}
				req, _ := http.NewRequest("POST", target, bytes.NewReader(bodies[i]))
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				if err != nil {
					fail(err)
					lat[i] = -1
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[i] = time.Since(at)
				if err != nil || resp.StatusCode != 200 {
					fail(fmt.Errorf("status %d, %v", resp.StatusCode, err))
					continue
				}
				ok.Add(1)
			}
		}()
	}
	for i := range n {
		due <- i
	}
	close(due)
	wg.Wait()
	elapsed := time.Since(t0)
	tr.CloseIdleConnections()
	r.Sent, r.OK, r.Failed = int64(n), ok.Load(), failed.Load()
	r.Achieved = float64(r.OK) / elapsed.Seconds()
	var ls []time.Duration
	for _, l := range lat {
		if l >= 0 {
			ls = append(ls, l)
		}
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
	if len(ls) > 0 {
		r.P50ms = float64(ls[len(ls)/2]) / 1e6
		r.P99ms = float64(ls[len(ls)*99/100]) / 1e6
	}
	if metricsURL != "" {
		// Drops and cuts are counted when an exchange is handed to the
		// audit, before its answer reaches the client: no need to wait for
		// the audit to drain.
		after, err := scrape(metricsURL)
		if err != nil {
			return r, err
		}
		r.Frames = 2 * int64(after["requests"]-before["requests"])
		r.Dropped = int64(after["dropped"] - before["dropped"])
		r.Cut = int64(after["cut"] - before["cut"])
		if r.Frames > 0 {
			r.Audited = 100 * float64(r.Frames-r.Dropped-r.Cut) / float64(r.Frames)
		}
	}
	return r, nil
}

// scrape reads the tap's counters from its metrics; nil without a URL.
func scrape(url string) (map[string]float64, error) {
	if url == "" {
		return nil, nil
	}
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch {
		case f[0] == "ahp_tap_audit_dropped_total":
			m["dropped"] = v
		case f[0] == "ahp_tap_audit_cut_total":
			m["cut"] = v
		case strings.HasPrefix(f[0], "ahp_tap_http_requests_total{") && strings.Contains(f[0], `status="200"`):
			m["requests"] += v
		}
	}
	return m, sc.Err()
}
