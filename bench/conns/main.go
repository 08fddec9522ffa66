// Command conns measures what many harness connections cost ahp-tap http
// (issue 27 item 4):
//
//	conns -url URL -idle N -pid PID
//	    opens N keep-alive connections, sends one 1 KiB hooks/intercept
//	    POST on each (so each is a harness connection the tap has served),
//	    leaves them all open and idle, waits -settle, and prints the tap's
//	    resident memory (VmRSS and VmHWM of /proc/PID/status).
//	conns -url URL -active N -duration D [-rate R] -metrics URL
//	    N connections each POST 1 KiB hooks/intercept bodies one after
//	    another for D; prints the requests answered, errors, the
//	    latency (p50, p99), and the tap's audit counters
//	    (ahp_tap_audit_dropped_total and ahp_tap_audit_cut_total: frames
//	    forwarded but not audited, what a TAP-1 reports) from its
//	    --metrics address before and after. With -rate the N connections
//	    together send R requests per second on a fixed schedule (each
//	    connection every N/R seconds, phases spread), as a fleet of
//	    harnesses does, instead of back to back: a closed loop of N
//	    clients saturates the machine whatever N is, which says how
//	    forwarding shares the CPU with the audit, not what N connections
//	    at a given load cost. A request the schedule asked for while the
//	    connection still waited for the previous answer is sent late, and
//	    counted.
//
// Every answer must be a 200 carrying the request's JSON-RPC id; exit
// status 1 when one is not. Raise the open-file limit for large N (the
// client holds N sockets, the tap N harness sockets).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	target := flag.String("url", "", "the tap's `URL` (POSTed to)")
	idle := flag.Int("idle", 0, "open `N` connections, one request each, then hold them idle")
	active := flag.Int("active", 0, "`N` connections posting back to back")
	duration := flag.Duration("duration", 10*time.Second, "how long the active connections post")
	pid := flag.Int("pid", 0, "the tap's process id (idle mode: its memory is read)")
	settle := flag.Duration("settle", 2*time.Second, "idle mode: wait this long before reading memory")
	metrics := flag.String("metrics", "", "the tap's metrics `URL` (http://ADDR/metrics)")
	size := flag.Int("size", 1024, "body size in `BYTES`")
	rate := flag.Float64("rate", 0, "active mode: `R` requests per second over all connections on a fixed schedule (0: back to back)")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" || (*idle > 0) == (*active > 0) || *rate < 0 {
		fmt.Fprintln(os.Stderr, "conns: need -url and one of -idle N or -active N (and -rate R ≥ 0)")
		os.Exit(2)
	}
	var failed atomic.Int64
	var reported atomic.Int64
	fail := func(err error) {
		failed.Add(1)
		if reported.Add(1) <= 3 {
			fmt.Fprintln(os.Stderr, "conns:", err)
		}
	}
	var ok atomic.Int64
	var seq atomic.Int64
	c0 := counters(*metrics)
	start := time.Now()
	if *idle > 0 {
		conns := make([]net.Conn, 0, *idle)
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64) // connect 64 at a time
		for range *idle {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				c, err := net.Dial("tcp", u.Host)
				if err != nil {
					fail(err)
					return
				}
				br := bufio.NewReader(c)
				if err := post(c, br, u, *size, seq.Add(1)); err != nil {
					fail(err)
					c.Close()
					return
				}
				ok.Add(1)
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}()
		}
		wg.Wait()
		time.Sleep(*settle)
		rss, hwm := memory(*pid)
		fmt.Printf("idle: %d connections open (%d failed) after %.1f s; tap VmRSS %s, VmHWM %s\n",
			len(conns), failed.Load(), time.Since(start).Seconds(), rss, hwm)
		for _, c := range conns {
			c.Close()
		}
	} else {
		deadline := start.Add(*duration)
		var every time.Duration // between one connection's requests; 0: back to back
		if *rate > 0 {
			every = time.Duration(float64(*active) / *rate * float64(time.Second))
		}
		var late atomic.Int64
		var mu sync.Mutex
		var took []time.Duration
		var wg sync.WaitGroup
		for i := range *active {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", u.Host)
				if err != nil {
					fail(err)
					return
				}
				defer c.Close()
				br := bufio.NewReader(c)
				var mine []time.Duration
				defer func() {
					mu.Lock()
					took = append(took, mine...)
					mu.Unlock()
				}()
				// Connection i's schedule starts i/N of an interval in, so
				// that the N connections' requests are spread evenly.
				next := start.Add(every * time.Duration(i) / time.Duration(*active))
				for {
					if every > 0 {
						if d := time.Until(next); d > 0 {
							time.Sleep(d)
						} else if -d > every {
							late.Add(1)
						}
					}
					t0 := time.Now()
					if !t0.Before(deadline) {
						return
					}
					if err := post(c, br, u, *size, seq.Add(1)); err != nil {
						fail(err)
						return
					}
					mine = append(mine, time.Since(t0))
					ok.Add(1)
					next = next.Add(every)
				}
			}()
		}
		wg.Wait()
		el := time.Since(start).Seconds()
		slices.Sort(took)
		mode := "back to back"
		if every > 0 {
			mode = fmt.Sprintf("scheduled at %.0f/s, %d sent over an interval late", *rate, late.Load())
		}
		fmt.Printf("active: %d connections (%s), %d requests answered in %.1f s (%.0f/s), %d failed; latency p50 %s, p99 %s\n",
			*active, mode, ok.Load(), el, float64(ok.Load())/el, failed.Load(), percentile(took, 50), percentile(took, 99))
	}
	if *metrics != "" {
		time.Sleep(time.Second) // the audit side catches up with the last exchanges
		c1 := counters(*metrics)
		req := c1["ahp_tap_http_requests_total"] - c0["ahp_tap_http_requests_total"]
		drop := c1["ahp_tap_audit_dropped_total"] - c0["ahp_tap_audit_dropped_total"]
		cut := c1["ahp_tap_audit_cut_total"] - c0["ahp_tap_audit_cut_total"]
		share := 0.0
		if req > 0 {
			share = 100 * (1 - (drop+cut)/(2*req))
		}
		fmt.Printf("tap: %.0f requests, %.0f frames dropped, %.0f cut: %.2f%% of %.0f frames audited\n", req, drop, cut, share, 2*req)
	}
	if failed.Load() > 0 {
		os.Exit(1)
	}
}

// post sends one hooks/intercept request of about size bytes on c and
// reads its answer, which must be a 200 carrying the request's id.
func post(c net.Conn, br *bufio.Reader, u *url.URL, size int, n int64) error {
	id := fmt.Sprintf("conns-%d-%d", os.Getpid(), n)
	body := `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
		`","source":"https://harness.example/conns","type":"tool.before","time":"2026-12-04T09:00:00Z",` +
		`"harness":{"name":"bench-harness","version":"1.0.0"},"session":{"id":"sess-conns"},` +
		`"tool":{"name":"read_file","kind":"file_read","input":{"path":"README.md","note":"PAD"},"origin":"native"},` +
		`"call":{"id":"call-` + id + `"},"path":"example"},"capabilities":{"effects":["deny"]}}}`
	body = strings.Replace(body, "PAD", strings.Repeat("x", max(0, size-len(body)+3)), 1)
	path := u.RequestURI()
	req := "POST " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte(`"`+id+`"`)) {
		return fmt.Errorf("status %d, body %.200s", resp.StatusCode, got)
	}
	return nil
}

// percentile returns the p-th percentile of sorted durations, rounded
// to microseconds ("-" when there are none).
func percentile(sorted []time.Duration, p int) string {
	if len(sorted) == 0 {
		return "-"
	}
	return sorted[(len(sorted)-1)*p/100].Round(time.Microsecond).String()
}

// memory returns VmRSS and VmHWM of process pid.
func memory(pid int) (rss, hwm string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?", "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[0] == "VmRSS:" {
			rss = f[1] + " " + f[2]
		}
		if len(f) >= 3 && f[0] == "VmHWM:" {
			hwm = f[1] + " " + f[2]
		}
	}
	return rss, hwm
}

// counters reads the tap's Prometheus counters (sums over labels).
func counters(addr string) map[string]float64 {
	out := map[string]float64{}
	if addr == "" {
		return out
	}
	resp, err := http.Get(addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conns: metrics:", err)
		return out
	}
	defer resp.Body.Close()
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
		name, _, _ := strings.Cut(f[0], "{")
		v, _ := strconv.ParseFloat(f[1], 64)
		out[name] += v
	}
	return out
}
