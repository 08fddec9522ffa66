package httpproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of httptest servers and test clients.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	)
}

// findings collects findings from the auditor.
type findings struct {
	mu sync.Mutex // guards list
	l  []tap.Finding
}

func (s *findings) Write(f tap.Finding) { s.mu.Lock(); s.l = append(s.l, f); s.mu.Unlock() }

func (s *findings) withCheck(check string) []tap.Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tap.Finding
	for _, f := range s.l {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

func (s *findings) dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, f := range s.l {
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}

// testTap is a running proxy with its auditor, capture and diagnostic log.
type testTap struct {
	url     string // http://127.0.0.1:port
	found   *findings
	capPath string
	diag    *syncBuffer
	metrics *Metrics
	proxy   *Proxy
	stop    func() // stops the proxy, closes the auditor and the capture
}

type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// serveProxy serves p on a listener at addr and returns its base URL and
// a shutdown that stops serving and returns Serve's error.
func serveProxy(t testing.TB, p *Proxy, addr string) (url string, shutdown func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), func() error {
		cancel()
		return <-done
	}
}

// startTap runs a proxy configured by cfg (Auditor, Log and Metrics are
// filled in). stop is idempotent and also runs at cleanup.
func startTap(t testing.TB, cfg Config) *testTap {
	t.Helper()
	return startTapAt(t, cfg, "127.0.0.1:0")
}

// startTapAt is startTap listening on addr.
func startTapAt(t testing.TB, cfg Config, addr string) *testTap {
	t.Helper()
	tt := &testTap{found: &findings{}, diag: &syncBuffer{}, capPath: filepath.Join(t.TempDir(), "cap.jsonl")}
	cw, err := capture.Create(tt.capPath, capture.Header{Tool: "test", Transport: tap.HTTP})
	if err != nil {
		t.Fatal(err)
	}
	var aud *tap.Auditor
	tt.metrics = NewMetrics(func() uint64 { return aud.Dropped() })
	aud = tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.HTTP}, Rules: rules.Set(rules.Options{}),
		Sink: tap.MultiSink{tt.found, tt.metrics.Sink()}, Recorder: cw}).Audit(tap.AuditorConfig{})
	cfg.Auditor, cfg.Metrics = aud, tt.metrics
	cfg.Log = zerolog.New(tt.diag).Level(zerolog.DebugLevel)
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var shutdown func() error
	tt.proxy = p
	tt.url, shutdown = serveProxy(t, p, addr)
	var once sync.Once
	tt.stop = func() {
		once.Do(func() {
			if err := shutdown(); err != nil {
				t.Errorf("Serve = %v, want nil", err)
			}
			aud.Close()
			cw.Close()
			p.Close()
		})
	}
	t.Cleanup(tt.stop)
	return tt
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// client is a harness-side HTTP client that changes nothing either.
func client() *http.Client {
	return &http.Client{
		Transport:     &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func post(t *testing.T, c *http.Client, u string, body []byte, hdr http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

const interceptBody = `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1"}}}`

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

func TestReverseForwardsUnchanged(t *testing.T) {
	// Ugly body bytes: CRLF, U+2028, invalid UTF-8, no trailing newline.
	reqBody := []byte("{\"jsonrpc\":\"2.0\",\r\n\"id\":\"a\u2028\",\"method\":\"hooks/intercept\",\"params\":{\"x\":\"\xff\"}}")
	respBody := []byte("\x1f\x8b not really gzip \r\n\xfe")
	var got struct {
		method, path, query string
		body                []byte
		header              http.Header
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.method, got.path, got.query, got.header = r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone()
		got.body, _ = io.ReadAll(r.Body)
		w.Header()["X-Lower-Case"] = []string{"kept"}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Multi", "1")
		w.Header().Add("X-Multi", "2")
		w.WriteHeader(200)
		w.Write(respBody)
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL+"/base")})

	hdr := jsonHeader()
	hdr.Set("Authorization", "Bearer abcdefgh12345678")
	hdr.Set("Accept-Encoding", "gzip")
	hdr.Set("X-Custom", "v")
	resp, body := post(t, client(), tt.url+"/agent-hooks?q=1", reqBody, hdr)

	if got.method != "POST" || got.path != "/base/agent-hooks" || got.query != "q=1" {
		t.Errorf("upstream saw %s %s?%s, want POST /base/agent-hooks?q=1", got.method, got.path, got.query)
	}
	if !bytes.Equal(got.body, reqBody) {
		t.Errorf("upstream body = %q, want %q", got.body, reqBody)
	}
	if n := len(got.header.Values("Authorization")); n != 1 {
		t.Errorf("upstream Authorization headers = %d, want 1", n)
	}
	for _, h := range []string{"Accept-Encoding", "X-Custom", "Content-Type", "Authorization"} {
		if got.header.Get(h) != hdr.Get(h) {
			t.Errorf("upstream header %s = %q, want %q", h, got.header.Get(h), hdr.Get(h))
		}
	}
	if resp.StatusCode != 200 || !bytes.Equal(body, respBody) {
		t.Errorf("harness got %d %q, want 200 %q", resp.StatusCode, body, respBody)
	}
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Values("X-Multi")[1] != "2" || resp.Header["X-Lower-Case"] == nil {
		t.Errorf("response headers changed: %v", resp.Header)
	}
	// Go's client sets User-Agent; a request without one must not gain one.
	req, _ := http.NewRequest("POST", tt.url+"/agent-hooks", strings.NewReader(interceptBody))
	req.Header = jsonHeader()
	req.Header["User-Agent"] = []string{""}
	r2, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r2.Body)
	r2.Body.Close()
	if ua, ok := got.header["User-Agent"]; ok {
		t.Errorf("upstream got User-Agent %q, want none", ua)
	}
}

func TestStatusCases(t *testing.T) {
	const observe = `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":{"id":"o1"}}}`
	var followed atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Store(true) }))
	defer target.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`)
		case "/accepted":
			w.WriteHeader(202)
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`)
		case "/error":
			http.Error(w, "boom", 500)
		case "/redirect":
			http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
		case "/challenge":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://x/.well-known/oauth-protected-resource"`)
			w.WriteHeader(401)
		}
	}))
	defer up.Close()
	tests := []struct {
		path, body string
		status     int
		check      string // the check expected to report, "" for none of HTTP-*
		level      tap.Level
	}{
		{"/ok", interceptBody, 200, "", 0},
		{"/accepted", observe, 202, "", 0},
		{"/html", interceptBody, 200, "HTTP-1", tap.Error},
		{"/error", interceptBody, 500, "HTTP-2", tap.Error},
		{"/redirect", interceptBody, 307, "HTTP-2", tap.Error},
		{"/challenge", interceptBody, 401, "HTTP-2", tap.Info},
		{"/accepted", interceptBody, 202, "HTTP-2", tap.Error},
	}
	for _, tc := range tests {
		t.Run(tc.path+"-"+fmt.Sprint(tc.status), func(t *testing.T) {
			tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
			resp, _ := post(t, client(), tt.url+tc.path, []byte(tc.body), jsonHeader())
			if resp.StatusCode != tc.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.status)
			}
			tt.stop()
			for _, c := range []string{"HTTP-1", "HTTP-2", "HTTP-3"} {
				fs := tt.found.withCheck(c)
				want := 0
				if c == tc.check {
					want = 1
				}
				if len(fs) != want {
					t.Errorf("%s findings = %d, want %d:%s", c, len(fs), want, tt.found.dump())
				} else if want == 1 && fs[0].Level != tc.level {
					t.Errorf("%s level = %v, want %v", c, fs[0].Level, tc.level)
				}
			}
		})
	}
	if followed.Load() {
		t.Errorf("the redirect was followed; it must be passed back to the harness")
	}
}

func TestBearerTokenNeverWritten(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a39281706"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		// A careless backend echoes the token in a deny reason and error data.
		if r.URL.Path == "/err" {
			io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","error":{"code":-32000,"message":"no","data":{"seen":"`+token+`"}}}`)
			return
		}
		if r.URL.Path == "/500" {
			http.Error(w, "bad token "+token, 500)
			return
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[{"type":"deny","reason":"token `+token+` rejected"}]}}`)
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
	hdr := jsonHeader()
	hdr.Set("Authorization", "Bearer "+token)
	c := client()
	leakyReq := strings.Replace(interceptBody, `"id":"e1"}`, `"id":"e1","auth":"`+token+`"}`, 1)
	post(t, c, tt.url+"/deny?token="+token, []byte(leakyReq), hdr)
	post(t, c, tt.url+"/err", []byte(interceptBody), hdr)
	post(t, c, tt.url+"/500", []byte(interceptBody), hdr)
	// Two Authorization headers.
	hdr2 := hdr.Clone()
	hdr2.Add("Authorization", "Bearer "+token)
	post(t, c, tt.url+"/ok", []byte(interceptBody), hdr2)

	// Metrics, scraped while running.
	mrec := httptest.NewRecorder()
	tt.metrics.Handler().ServeHTTP(mrec, httptest.NewRequest("GET", "/metrics", nil))

	// An upstream failure's error message names the URL, query and all.
	down := startTap(t, Config{Upstream: mustURL(t, "http://127.0.0.1:1")})
	resp, errBody := post(t, c, down.url+"/x?token="+token, []byte(interceptBody), hdr)
	if resp.StatusCode != 502 {
		t.Errorf("status = %d, want 502", resp.StatusCode)
	}
	down.stop()
	tt.stop()

	auth := tt.found.withCheck("AUTH-1")
	ptrs := map[string]bool{}
	for _, f := range auth {
		ptrs[f.Pointer] = true
	}
	for _, p := range []string{"/params/event/auth", "/result/effects/0/reason", "/error/data/seen", ""} {
		if !ptrs[p] {
			t.Errorf("no AUTH-1 finding at %q:%s", p, tt.found.dump())
		}
	}
	// Everything ahp-tap wrote or said.
	var fjson bytes.Buffer
	for _, fs := range []*findings{tt.found, down.found} {
		json.NewEncoder(&fjson).Encode(fs.l)
	}
	capBytes, _ := os.ReadFile(tt.capPath)
	downCap, _ := os.ReadFile(down.capPath)
	outputs := map[string][]byte{
		"capture":        capBytes,
		"capture (down)": downCap,
		"findings":       fjson.Bytes(),
		"diagnostic log": []byte(tt.diag.String() + down.diag.String()),
		"metrics":        mrec.Body.Bytes(),
		"502 body":       errBody,
	}
	for name, b := range outputs {
		if bytes.Contains(b, []byte(token)) {
			t.Errorf("the bearer token appears in the %s", name)
		}
	}
	if !bytes.Contains(capBytes, []byte(tap.RedactedCredential)) {
		t.Errorf("capture holds no redaction marker; was the leak audited at all?")
	}
	for _, p := range []string{tt.capPath, down.capPath} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("capture %s mode = %v, want 0600", p, st.Mode().Perm())
		}
	}
}

func TestParallelRequestsMatchTheirResponses(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct{ ID string }
		json.Unmarshal(b, &m)
		if strings.HasSuffix(m.ID, "7") {
			time.Sleep(time.Millisecond) // reorder some answers
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":{"protocolVersion":"draft"}}`, m.ID)
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
	c := client()
	const n = 400
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("req-%d", i)
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`, id)
			resp, err := c.Post(tt.url+"/agent-hooks", "application/json", strings.NewReader(body))
			if err != nil {
				errs <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf(`"id":%q`, id); !strings.Contains(string(b), want) {
				errs <- fmt.Sprintf("request %s got %s", id, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	tt.stop()
	items := readCapture(t, tt.capPath)
	frames := 0
	for _, it := range items {
		if it.Frame != nil {
			frames++
		}
	}
	if frames != 2*n {
		t.Errorf("captured frames = %d, want %d", frames, 2*n)
	}
	if fs := tt.found.withCheck("HTTP-2"); len(fs) != 0 {
		t.Errorf("HTTP-2 findings on conforming traffic:%s", tt.found.dump())
	}
}

func readCapture(t *testing.T, path string) []capture.Item {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	items, err := capture.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// capturedFrames is the frames of the capture at path, in order.
func capturedFrames(t *testing.T, path string) []*tap.Frame {
	t.Helper()
	var frames []*tap.Frame
	for _, it := range readCapture(t, path) {
		if it.Frame != nil {
			frames = append(frames, it.Frame)
		}
	}
	return frames
}

func TestCaptureKeepsPerConnectionOrder(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(bytes.Replace(b, []byte(`"method":"hooks/capabilities","params"`), []byte(`"result"`), 1))
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
			for i := range 20 {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"g%d-%d","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`, g, i)
				resp, err := c.Post(tt.url, "application/json", strings.NewReader(body))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			c.CloseIdleConnections()
		}()
	}
	wg.Wait()
	tt.stop()
	last := map[string]string{} // conn -> direction of its last frame
	for _, it := range readCapture(t, tt.capPath) {
		f := it.Frame
		if f == nil {
			continue
		}
		if prev := last[f.Conn]; prev == f.Dir.String() {
			t.Fatalf("conn %s: two %s frames in a row at seq %d; request and response must alternate", f.Conn, prev, f.Seq)
		}
		last[f.Conn] = f.Dir.String()
	}
}

func TestUpstreamDown(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	tt := startTap(t, Config{Upstream: mustURL(t, "http://"+addr)})
	c := client()
	for range 3 { // the tap keeps serving
		resp, body := post(t, c, tt.url+"/agent-hooks", []byte(interceptBody), jsonHeader())
		if resp.StatusCode != 502 || !strings.Contains(string(body), "refused") {
			t.Errorf("got %d %q, want 502 naming the refusal", resp.StatusCode, body)
		}
	}
	tt.stop()
	fs := tt.found.withCheck("HTTP-2")
	if len(fs) != 3 || !strings.Contains(fs[0].Message, "refused") {
		t.Errorf("want 3 HTTP-2 operational failures naming the refusal:%s", tt.found.dump())
	}
}

func TestUpstreamReset(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
	resp, _ := post(t, client(), tt.url, []byte(interceptBody), jsonHeader())
	if resp.StatusCode != 502 {
		t.Errorf("status = %d, want 502", resp.StatusCode)
	}
	tt.stop()
	if fs := tt.found.withCheck("HTTP-2"); len(fs) != 1 {
		t.Errorf("want one HTTP-2 operational failure:%s", tt.found.dump())
	}
}

func TestSlowUpstreamTimesOut(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL), UpstreamTimeout: 100 * time.Millisecond})
	resp, body := post(t, client(), tt.url, []byte(interceptBody), jsonHeader())
	if resp.StatusCode != 504 {
		t.Errorf("got %d %q, want 504", resp.StatusCode, body)
	}
	tt.stop()
	fs := tt.found.withCheck("HTTP-2")
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "did not answer within") {
		t.Errorf("want one HTTP-2 timeout finding:%s", tt.found.dump())
	}
}

// patternReader yields n bytes of a repeating pattern without holding them.
type patternReader struct{ left int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	for i := range p {
		p[i] = "0123456789abcdef"[(r.left-int64(i))%16]
	}
	r.left -= int64(len(p))
	return len(p), nil
}

func TestLargeBodyStreamsWithBoundedMemory(t *testing.T) {
	e2e.Only(t) // a slow case (internal/e2e): CI runs it
	const size = 50 << 20
	want := sha256.New()
	io.Copy(want, &patternReader{left: size})
	wantSum := hex.EncodeToString(want.Sum(nil))

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Got", fmt.Sprintf("%d %x", n, h.Sum(nil)))
		io.Copy(w, &patternReader{left: size}) // and a 50 MB answer
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL), MaxAuditBody: 1 << 20})

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	req, _ := http.NewRequest("POST", tt.url+"/agent-hooks", &patternReader{left: size})
	req.ContentLength = size
	req.Header = jsonHeader()
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	close(stop)
	<-sampled
	if err != nil || n != size || hex.EncodeToString(h.Sum(nil)) != wantSum {
		t.Errorf("response: %d bytes (err %v), want %d intact; tap log:\n%s", n, err, size, tt.diag.String())
	}
	if got := resp.Header.Get("X-Got"); got != fmt.Sprintf("%d %s", size, wantSum) {
		t.Errorf("upstream got %q, want %d bytes intact", got, size)
	}
	if grew := int64(peak.Load()) - int64(before.HeapInuse); grew > 24<<20 {
		t.Errorf("heap grew by %d MiB while forwarding 2×50 MiB; bodies must stream", grew>>20)
	}
	tt.stop()
	if fs := tt.found.withCheck("TAP-1"); len(fs) != 2 {
		t.Errorf("want 2 TAP-1 truncated-audit findings:%s", tt.found.dump())
	}
}

// tlsUpstream is an HTTPS upstream with a certificate from a test CA, and a
// pool trusting that CA.
func tlsUpstream(t *testing.T, h http.Handler) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	up := httptest.NewTLSServer(h)
	t.Cleanup(up.Close)
	pool := x509.NewCertPool()
	pool.AddCert(up.Certificate())
	return up, pool
}

func okBackend() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`)
	})
}

func TestTLSUpstreamIsVerified(t *testing.T) {
	up, pool := tlsUpstream(t, okBackend())
	trusted := startTap(t, Config{Upstream: mustURL(t, up.URL), RootCAs: pool})
	resp, _ := post(t, client(), trusted.url, []byte(interceptBody), jsonHeader())
	if resp.StatusCode != 200 {
		t.Errorf("trusted upstream: status = %d, want 200", resp.StatusCode)
	}
	untrusted := startTap(t, Config{Upstream: mustURL(t, up.URL)}) // system roots only
	resp, body := post(t, client(), untrusted.url, []byte(interceptBody), jsonHeader())
	if resp.StatusCode != 502 || !strings.Contains(string(body), "certificate") {
		t.Errorf("untrusted upstream: got %d %q, want 502 naming the certificate", resp.StatusCode, body)
	}
}

func TestForwardPlainHTTPIsAudited(t *testing.T) {
	up := httptest.NewServer(okBackend())
	defer up.Close()
	tt := startTap(t, Config{Forward: true})
	c := client()
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(mustURL(t, tt.url))
	resp, body := post(t, c, up.URL+"/agent-hooks", []byte(interceptBody), jsonHeader())
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"result"`) {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	// A relative request is not for a forward proxy.
	resp, _ = post(t, client(), tt.url+"/agent-hooks", []byte(interceptBody), jsonHeader())
	if resp.StatusCode != 400 {
		t.Errorf("relative request to a forward proxy: status = %d, want 400", resp.StatusCode)
	}
	tt.stop()
	if n := countFrames(t, tt.capPath); n != 2 {
		t.Errorf("captured frames = %d, want 2", n)
	}
}

func countFrames(t *testing.T, path string) int {
	return len(capturedFrames(t, path))
}

func TestForwardConnectWithoutMITMIsTunnelled(t *testing.T) {
	up, pool := tlsUpstream(t, okBackend())
	tt := startTap(t, Config{Forward: true})
	c := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(mustURL(t, tt.url)),
		TLSClientConfig: &tls.Config{RootCAs: pool}, // the harness talks TLS to the real upstream
	}}
	resp, body := post(t, c, up.URL+"/agent-hooks", []byte(interceptBody), jsonHeader())
	if resp.StatusCode != 200 || resp.TLS == nil || !resp.TLS.PeerCertificates[0].Equal(up.Certificate()) {
		t.Fatalf("got %d %q; want 200 from the real upstream's certificate", resp.StatusCode, body)
	}
	c.CloseIdleConnections()
	tt.stop()
	if n := countFrames(t, tt.capPath); n != 0 {
		t.Errorf("captured frames = %d, want 0: a tunnel is not audited", n)
	}
}

func TestForwardMITMIsAudited(t *testing.T) {
	up, pool := tlsUpstream(t, okBackend())
	dir := filepath.Join(t.TempDir(), "ca")
	certPath, err := InitCA(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	tt := startTap(t, Config{Forward: true, MITMCA: ca, RootCAs: pool})
	caPEM, _ := os.ReadFile(certPath)
	harnessRoots := x509.NewCertPool()
	harnessRoots.AppendCertsFromPEM(caPEM)
	c := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(mustURL(t, tt.url)),
		TLSClientConfig: &tls.Config{RootCAs: harnessRoots}, // trusts only the ahp-tap CA
	}}
	hdr := jsonHeader()
	hdr.Set("Authorization", "Bearer mitm-token-123456789")
	resp, body := post(t, c, up.URL+"/agent-hooks", []byte(interceptBody), hdr)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"result"`) {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	c.CloseIdleConnections()
	tt.stop()
	frames := capturedFrames(t, tt.capPath)
	if len(frames) != 2 || string(frames[0].Raw) != interceptBody || !strings.HasPrefix(frames[0].HTTP.Upstream, "https://") {
		t.Fatalf("captured %d frames, want the intercepted request and response", len(frames))
	}
	if got := frames[0].HTTP.Header["Authorization"]; len(got) != 1 || strings.Contains(got[0], "mitm-token") {
		t.Errorf("captured Authorization = %q, want it redacted", got)
	}
}

func TestShutdownFinishesInFlight(t *testing.T) {
	started := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		close(started)
		time.Sleep(200 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`)
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
	got := make(chan int, 1)
	go func() {
		resp, err := client().Post(tt.url, "application/json", strings.NewReader(interceptBody))
		if err != nil {
			got <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	<-started
	tt.stop() // returns once the in-flight request is done
	if s := <-got; s != 200 {
		t.Errorf("in-flight request status = %d, want 200", s)
	}
	if _, err := http.Post(tt.url, "application/json", strings.NewReader(interceptBody)); err == nil {
		t.Errorf("the tap still accepts after shutdown")
	}
}

func TestCAInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	if _, err := InitCA(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CACertFile, CAKeyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", f, st.Mode().Perm())
		}
	}
	if _, err := InitCA(dir, time.Now()); err == nil {
		t.Errorf("InitCA over an existing CA succeeded; it must refuse")
	}
	os.Chmod(filepath.Join(dir, CAKeyFile), 0o644)
	if _, err := LoadCA(dir); err == nil {
		t.Errorf("LoadCA accepted a world-readable key")
	}
}

func TestMetrics(t *testing.T) {
	up := httptest.NewServer(okBackend())
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
	post(t, client(), tt.url, []byte(interceptBody), http.Header{"Content-Type": {"text/plain"}})
	tt.stop()
	rec := httptest.NewRecorder()
	tt.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`ahp_tap_http_requests_total{method="POST",status="200"} 1`,
		`ahp_tap_findings_total{check="HTTP-1",level="error"} 1`,
		`ahp_tap_upstream_latency_seconds_count 1`,
		`ahp_tap_audit_dropped_total 0`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, rec.Body.String())
		}
	}
}

func TestTarget(t *testing.T) {
	tests := []struct{ up, in, want string }{
		{"https://p.example.com", "/agent-hooks", "https://p.example.com/agent-hooks"},
		{"https://p.example.com/", "/agent-hooks", "https://p.example.com/agent-hooks"},
		{"https://p.example.com/base", "/agent-hooks", "https://p.example.com/base/agent-hooks"},
		{"https://p.example.com/base/", "/", "https://p.example.com/base/"},
		{"https://p.example.com/base?k=1", "/x?q=2", "https://p.example.com/base/x?k=1&q=2"},
	}
	for _, tc := range tests {
		u := mustURL(t, tc.up)
		p := &Proxy{upstream: u, rewriteTarget: (u.Path != "" && u.Path != "/") || u.RawQuery != ""}
		if got := p.target(mustURL(t, tc.in)).String(); got != tc.want {
			t.Errorf("target(%s, %s) = %s, want %s", tc.up, tc.in, got, tc.want)
		}
		// The relay rewrites the raw target the same way.
		if got := u.Scheme + "://" + u.Host + string(p.relayTarget([]byte(tc.in))); got != tc.want {
			t.Errorf("relayTarget(%s, %s) = %s, want %s", tc.up, tc.in, got, tc.want)
		}
	}
}

func TestForwardUpstreamDown(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	tt := startTap(t, Config{Forward: true})
	c := client()
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(mustURL(t, tt.url))
	resp, body := post(t, c, "http://"+addr+"/agent-hooks", []byte(interceptBody), jsonHeader())
	if resp.StatusCode != 502 || !strings.Contains(string(body), "refused") {
		t.Errorf("got %d %q, want 502 naming the refusal", resp.StatusCode, body)
	}
	tt.stop()
	if fs := tt.found.withCheck("HTTP-2"); len(fs) != 1 {
		t.Errorf("want one HTTP-2 operational failure:%s", tt.found.dump())
	}
}

func TestUpstreamBreaksOffMidBody(t *testing.T) {
	for _, tc := range []struct{ chunked, forward bool }{{false, false}, {true, false}, {true, true}} {
		chunked := tc.chunked
		t.Run(fmt.Sprintf("chunked=%v,forward=%v", tc.chunked, tc.forward), func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				if !chunked {
					w.Header().Set("Content-Length", "1000")
				}
				w.WriteHeader(200)
				io.WriteString(w, `{"jsonrpc":"2.0",`)
				w.(http.Flusher).Flush()
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
			}))
			defer up.Close()
			cfg, target := Config{Upstream: mustURL(t, up.URL)}, ""
			if tc.forward {
				cfg, target = Config{Forward: true}, up.URL
			}
			tt := startTap(t, cfg)
			if !tc.forward {
				target = tt.url
			}
			req, _ := http.NewRequest("POST", target, strings.NewReader(interceptBody))
			req.Header = jsonHeader()
			c := client()
			if tc.forward {
				c.Transport.(*http.Transport).Proxy = http.ProxyURL(mustURL(t, tt.url))
			}
			if resp, err := c.Do(req); err == nil {
				if b, err := io.ReadAll(resp.Body); err == nil {
					t.Errorf("the harness read a complete body %q; a broken-off body must look broken", b)
				}
				resp.Body.Close()
			}
			tt.stop()
			if fs := tt.found.withCheck("BASE-1"); len(fs) != 0 {
				t.Errorf("a broken-off body was checked as a message:%s", tt.found.dump())
			}
			if fs := tt.found.withCheck("TAP-1"); len(fs) != 1 {
				t.Errorf("want one TAP-1 for the partial audit copy:%s", tt.found.dump())
			}
		})
	}
}

func TestFrameTimesMeasureUpstreamLatency(t *testing.T) {
	const delay = 50 * time.Millisecond
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`)
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
	post(t, client(), tt.url, []byte(interceptBody), jsonHeader())
	tt.stop()
	frames := capturedFrames(t, tt.capPath)
	if len(frames) != 2 {
		t.Fatalf("captured %d frames, want 2", len(frames))
	}
	// CORR-3 judges deadlines from the frame times: they must span the
	// upstream's answer time.
	if got := frames[1].Time.Sub(frames[0].Time); got < delay {
		t.Errorf("response time - request time = %v, want at least the upstream's %v", got, delay)
	}
	if ms := frames[1].HTTP.LatencyMs; ms < float64(delay.Milliseconds()) {
		t.Errorf("LatencyMs = %v, want at least %d", ms, delay.Milliseconds())
	}
}

func TestNoHeadersAdded(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header()["Date"] = nil // the upstream sends no Date and no Content-Type
		w.Header()["Content-Type"] = nil
		w.WriteHeader(200)
		io.WriteString(w, `<html>not sniffed</html>`)
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
	resp, _ := post(t, client(), tt.url, []byte(interceptBody), jsonHeader())
	for _, h := range []string{"Content-Type", "Date"} {
		if v, ok := resp.Header[h]; ok {
			t.Errorf("the harness got %s %q, which the upstream did not send", h, v)
		}
	}
}
