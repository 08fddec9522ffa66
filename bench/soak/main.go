// Command soak drives mixed AHP traffic through a stdio tap and an HTTP tap
// at the same time for a fixed duration (bench/soak.sh, about 10 minutes,
// not in CI), samples the taps' RSS over time, and at the end checks that
// the findings are exactly the ones the traffic should cause: one BASE-2
// per deliberately bad response (no protocolVersion), one STDIO-1 per
// non-JSON line sent on stdio (each is a run of one), nothing else,
// unless ahp-tap says (TAP-1) it dropped audit copies.
//
// With -backend it is the stdio backend: it answers each request line with
// a result, and every -bad-th one without protocolVersion.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/vocab"
)

var (
	backend  = flag.Bool("backend", false, "be the stdio backend")
	bad      = flag.Int("bad", 97, "every `N`th response lacks protocolVersion (one BASE-2 each)")
	duration = flag.Duration("duration", 10*time.Minute, "how long to drive traffic")
	tap      = flag.String("tap", "ahp-tap", "the ahp-tap binary")
	dir      = flag.String("dir", ".", "working directory for logs")
	workers  = flag.Int("http-workers", 4, "concurrent HTTP clients")
	every    = flag.Duration("sample", 10*time.Second, "RSS sample interval")
)

func main() {
	flag.Parse()
	if *backend {
		serveStdio(os.Stdin, os.Stdout)
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// answer is the result for request number n (its id as JSON).
func answer(id []byte, n int64) []byte {
	if n%int64(*bad) == 0 {
		return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"effects":[]}}`)
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"protocolVersion":"draft","effects":[]}}`)
}

var idRE = regexp.MustCompile(`^\{"jsonrpc":"2.0","id":("[^"]*")`)

func serveStdio(in io.Reader, out io.Writer) {
	br := bufio.NewReaderSize(in, 1<<16)
	bw := bufio.NewWriter(out)
	var n int64
	for {
		line, err := br.ReadBytes('\n')
		if m := idRE.FindSubmatch(line); m != nil {
			n++
			bw.Write(answer(m[1], n))
			bw.WriteByte('\n')
		}
		if br.Buffered() == 0 || err != nil {
			bw.Flush()
		}
		if err != nil {
			return
		}
	}
}

func request(id string, size int) []byte {
	head := `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
		`","source":"urn:example:soak","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"soak","version":"1"},` +
		`"session":{"id":"sess_soak"},"tool":{"name":"Bash","kind":"shell","origin":"native","input":{"command":"`
	tail := `"}},"call":{"id":"call_` + id + `"},"path":"native"},"capabilities":{"effects":["deny"]}}}`
	return []byte(head + strings.Repeat("x", max(0, size-len(head)-len(tail))) + tail)
}

// sizes cycles through request sizes: mostly 1 KiB, some 64 KiB, a 1 MiB.
var sizes = []int{1024, 1024, 1024, 2048, 1024, 65536, 1024, 1024, 512, 1 << 20}

type counts struct {
	stdioFrames, httpRequests, badStdio, badHTTP, httpErrors, nonJSON atomic.Int64
}

func run() error {
	exe, _ := os.Executable()
	var c counts
	stdioLog, httpLog := *dir+"/stdio.log.jsonl", *dir+"/http.log.jsonl"
	os.Remove(stdioLog)
	os.Remove(httpLog)

	// The stdio tap around this program as backend.
	st := exec.Command(*tap, "stdio", "--log", stdioLog, "--summary=false", "--", exe, "-backend", "-bad", strconv.Itoa(*bad))
	st.Stderr = os.Stderr
	stIn, _ := st.StdinPipe()
	stOut, _ := st.StdoutPipe()
	if err := st.Start(); err != nil {
		return err
	}

	// The HTTP backend and tap.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var httpN atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := idRE.FindSubmatch(body)
		if m == nil {
			http.Error(w, "no id", 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer(m[1], httpN.Add(1)))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	ht := exec.Command(*tap, "http", "--listen", "127.0.0.1:0", "--upstream", "http://"+ln.Addr().String(), "--log", httpLog)
	htErr, _ := ht.StderrPipe()
	if err := ht.Start(); err != nil {
		return err
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(htErr)
		re := regexp.MustCompile(`listening on http://([0-9.:]+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
			// The tap's summary, and its diagnostics (an upstream failure
			// says why a request got an error).
			if !strings.Contains(sc.Text(), "listening on") {
				fmt.Fprintln(os.Stderr, "http tap:", sc.Text())
			}
		}
	}()
	addr := <-addrc

	stop := time.Now().Add(*duration)
	var wg sync.WaitGroup
	// stdio: requests with up to 16 in flight, a non-JSON line now and then.
	wg.Add(2)
	sem := make(chan struct{}, 16)
	go func() {
		defer wg.Done()
		for i := 0; time.Now().Before(stop); i++ {
			sem <- struct{}{}
			stIn.Write(append(request("s"+strconv.Itoa(i), sizes[i%len(sizes)]), '\n'))
			if i%1000 == 0 {
				stIn.Write([]byte("this line is not JSON\n")) // one STDIO-1 each (a run of one such line)
				c.nonJSON.Add(1)
			}
		}
		stIn.Close()
	}()
	go func() {
		defer wg.Done()
		br := bufio.NewReaderSize(stOut, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				c.stdioFrames.Add(1)
				if !bytes.Contains(line, []byte("protocolVersion")) {
					c.badStdio.Add(1)
				}
				<-sem
			}
			if err != nil {
				return
			}
		}
	}()
	// http: workers posting requests.
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &http.Client{Timeout: time.Minute}
			for i := 0; time.Now().Before(stop); i++ {
				body := request(fmt.Sprintf("h%d-%d", w, i), sizes[i%len(sizes)])
				resp, err := cl.Post("http://"+addr+"/", "application/json", bytes.NewReader(body))
				if err != nil {
					if c.httpErrors.Add(1) <= 5 {
						fmt.Fprintf(os.Stderr, "soak: %s http request %d-%d (%d bytes): %v\n", time.Now().UTC().Format(time.RFC3339Nano), w, i, len(body), err)
					}
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				c.httpRequests.Add(1)
				if resp.StatusCode != 200 {
					if c.httpErrors.Add(1) <= 5 {
						fmt.Fprintf(os.Stderr, "soak: %s http request %d-%d (%d bytes): status %d: %.200q\n", time.Now().UTC().Format(time.RFC3339Nano), w, i, len(body), resp.StatusCode, b)
					}
				} else if !bytes.Contains(b, []byte("protocolVersion")) {
					c.badHTTP.Add(1)
				}
			}
		}()
	}
	// RSS over time.
	done := make(chan struct{})
	go func() {
		t0 := time.Now()
		tk := time.NewTicker(*every)
		defer tk.Stop()
		fmt.Printf("%8s %12s %12s %14s %14s %14s\n", "t", "stdio-frames", "http-reqs", "stdio-RSS-MiB", "audit-RSS-MiB", "http-RSS-MiB")
		audit := 0
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				if audit == 0 || rssMiB(audit) == 0 {
					audit = auditPID()
				}
				s, a, h := rssMiB(st.Process.Pid), rssMiB(audit), rssMiB(ht.Process.Pid)
				fmt.Printf("%8s %12d %12d %14.1f %14.1f %14.1f\n", time.Since(t0).Round(time.Second), c.stdioFrames.Load(), c.httpRequests.Load(), s, a, h)
				sampled.Lock()
				sampled.stdio, sampled.audit, sampled.http = max(sampled.stdio, s), max(sampled.audit, a), max(sampled.http, h)
				sampled.Unlock()
			}
		}
	}()
	wg.Wait()
	close(done)
	if err := st.Wait(); err != nil {
		return fmt.Errorf("stdio tap: %v", err)
	}
	ht.Process.Signal(syscall.SIGTERM)
	if err := ht.Wait(); err != nil {
		return fmt.Errorf("http tap: %v", err)
	}
	peak := func(cmd *exec.Cmd) float64 {
		return float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
	}
	sampled.Lock()
	fmt.Printf("\nstdio: %d frames answered, %d bad responses sent; peak RSS %.1f MiB (sampled: forwarding %.1f MiB, audit process %.1f MiB)\n",
		c.stdioFrames.Load(), c.badStdio.Load(), peak(st), sampled.stdio, sampled.audit)
	fmt.Printf("http:  %d requests answered (%d errors), %d bad responses; peak RSS %.1f MiB (sampled %.1f MiB)\n",
		c.httpRequests.Load(), c.httpErrors.Load(), c.badHTTP.Load(), peak(ht), sampled.http)
	sampled.Unlock()
	ok := true
	for _, l := range []struct {
		name, path string
		base2      int64
		stdio1     int64
	}{{"stdio", stdioLog, c.badStdio.Load(), c.nonJSON.Load()}, {"http", httpLog, c.badHTTP.Load(), 0}} {
		got, dropped, err := tally(l.path)
		if err != nil {
			return err
		}
		want := map[string]int64{string(vocab.Base2): l.base2}
		if l.stdio1 > 0 {
			want[string(vocab.Stdio1)] = l.stdio1
		}
		fmt.Printf("%s findings: %v; not audited (TAP-1): %d\n", l.name, got, dropped)
		for check, n := range got {
			if check == string(vocab.Tap1) {
				continue
			}
			if w := want[check]; n != w && dropped == 0 {
				fmt.Printf("  MISMATCH %s: %d findings, want %d\n", check, n, w)
				ok = false
			}
		}
		for check, w := range want {
			if got[check] != w && dropped == 0 {
				fmt.Printf("  MISMATCH %s: %d findings, want %d\n", check, got[check], w)
				ok = false
			}
		}
		if c.httpErrors.Load() > 0 && l.name == "http" {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("findings differ from those expected")
	}
	fmt.Println("findings equal those expected")
	return nil
}

// tally counts a log's findings by check and the frames TAP-1 says were
// not audited.
func tally(path string) (map[string]int64, int64, error) {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, 0, err
	}
	got := map[string]int64{}
	var dropped int64
	re := regexp.MustCompile(`^(\d+) frames`)
	for _, line := range bytes.Split(data, []byte("\n")) {
		var r struct{ Check, Message string }
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		got[r.Check]++
		if r.Check == string(vocab.Tap1) {
			if m := re.FindStringSubmatch(r.Message); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				dropped += n
			}
		}
	}
	return got, dropped, nil
}

// sampled holds the highest RSS each sample saw (the rusage peak of a
// process started with vfork can be its parent's).
var sampled struct {
	sync.Mutex
	stdio, audit, http float64
}

// auditPID finds the stdio tap's audit process: it runs in its own
// session, so it is not a child the soak holds.
func auditPID() int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && args[1] == "__audit-process" && strings.HasPrefix(filepath.Base(args[0]), "ahp-tap") {
			return pid
		}
	}
	return 0
}

func rssMiB(pid int) float64 {
	if pid == 0 {
		return 0
	}
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
