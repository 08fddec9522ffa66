// Package httpproxy is ahp-tap's HTTP adapter: a reverse proxy in front of
// an AHP backend, or a forward proxy the harness reaches through
// HTTP_PROXY/HTTPS_PROXY. Reverse mode runs on a byte-preserving HTTP/1.1
// relay (relay.go); forward mode, CONNECT, HTTPS interception and the
// requests the relay declines run on net/http and
// github.com/elazarl/goproxy (imported only here). Every request and
// response is forwarded unchanged but for the changes docs/http.md lists,
// and a capped copy of each body, with its HTTP envelope, goes to a
// tap.Auditor off the forwarding path.
package httpproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
	"github.com/rs/zerolog"

	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Defaults for Config.
const (
	DefaultMaxAuditBody    = 16 << 20
	DefaultUpstreamTimeout = 60 * time.Second
	DefaultDrain           = 10 * time.Second
)

// Config says where a Proxy forwards to and how.
type Config struct {
	// Upstream is the backend in reverse mode: a request for path P goes
	// to Upstream's path followed by P. Nil in forward mode.
	Upstream *url.URL
	// Forward selects forward-proxy mode (HTTP_PROXY/HTTPS_PROXY).
	Forward bool
	// MITMCA, in forward mode, is the CA that signs certificates for the
	// HTTPS hosts the harness reaches; nil tunnels CONNECT untouched.
	MITMCA *tls.Certificate
	// RootCAs are the roots trusted for upstream TLS; nil means the
	// system's roots. Verification is never turned off.
	RootCAs *x509.CertPool
	// UpstreamTimeout bounds the wait for the upstream's response headers;
	// past it the harness gets 504 (0: DefaultUpstreamTimeout).
	UpstreamTimeout time.Duration
	// Probe is the shortest deadline an intercept can have (0: none known,
	// tap.Config.MinDeadline). An exchange still unanswered that long
	// after its request hands its request to the auditor alone, with a
	// NoteDeadline, so that its deadline is judged as it passes (CORR-3,
	// issue 21 item 8) rather than when the answer or the end comes.
	Probe time.Duration
	// MaxAuditBody caps the audit copy of each body (0: DefaultMaxAuditBody).
	// Forwarded bodies are never capped.
	MaxAuditBody int
	// Drain bounds how long Serve waits for requests in flight when its
	// context ends (0: DefaultDrain).
	Drain time.Duration
	// Auditor receives a frame per body and notes for the rest. Required.
	Auditor *tap.Auditor
	// Metrics, when not nil, counts requests, latency and failures.
	Metrics *Metrics
	// Log is the diagnostic log (zero value: nothing).
	Log zerolog.Logger
	// Redact says which headers and query parameters are redacted besides
	// the Authorization credential (zero value: the defaults).
	Redact Redaction
	// ReadTimeout bounds how long a harness may take to send a request
	// head, and is the base allowance of its body, which gets one more
	// second per BodyMinRate bytes received (0: DefaultReadTimeout). A
	// connection past it is closed: slow heads and slow bodies hold a
	// connection (and an upstream connection) no longer.
	ReadTimeout time.Duration
	// MaxCredentials bounds how many credentials are remembered for
	// redaction (0: httpaudit.DefaultMaxCredentials).
	MaxCredentials int
	// Inject, when set (reverse mode only), injects the plan's faults
	// (--inject, issue 25; inject.go): the tap answers selected requests
	// in the backend's place. nil: nothing of it is on the path.
	Inject *inject.Plan
}

// Redaction says what is redacted besides the Authorization credential
// (--redact-header, --no-redact): the HTTP audit-frame builder's.
type Redaction = httpaudit.Redaction

// DefaultReadTimeout is Config.ReadTimeout's default: a harness sends a
// request head within it, and a body within it plus a second per
// BodyMinRate bytes.
const DefaultReadTimeout = relayHeadWait

// BodyMinRate is the slowest a request body may arrive, in bytes per
// second, past the first ReadTimeout: a 16 MiB body may take 30 s + 17 min,
// one byte every 5 s (slowloris) at most about 30 s.
const BodyMinRate = 16 << 10

// A readDeadliner is a harness connection, or net/http's control of one.
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// bodyPace returns the pace of a request body read from c: before each
// read that could wait, the read deadline is the body's start plus
// ReadTimeout plus a second per BodyMinRate bytes received so far. Called
// with -1 once the body has been read, it clears the deadline: a slow
// upstream answer must not look like a slow harness.
func (p *Proxy) bodyPace(c readDeadliner) func(got int64) {
	start := time.Now()
	return func(got int64) {
		if got < 0 {
			_ = c.SetReadDeadline(time.Time{})
			return
		}
		_ = c.SetReadDeadline(start.Add(p.readTimeout + time.Duration(got)*time.Second/BodyMinRate))
	}
}

// A Proxy forwards AHP traffic and feeds the auditor. It is an
// http.Handler; Serve runs it on a listener.
type Proxy struct {
	upstream    *url.URL
	forward     bool
	maxAudit    int
	drain       time.Duration
	readTimeout time.Duration // Config.ReadTimeout
	auditor     *tap.Auditor
	metrics     *Metrics
	log         zerolog.Logger

	tr    *http.Transport          // upstream transport: verifies TLS, never compresses, never follows redirects
	gp    *goproxy.ProxyHttpServer // the goproxy front: forward requests, CONNECT, and NonproxyHandler for reverse mode
	creds httpaudit.Builder        // the audit copy of each exchange: credentials seen, for redaction and AUTH-1; memory only
	// lastTarget is the relay's last request target redacted (for the
	// envelopes of the next requests to it): memory only, like creds.
	lastTarget atomic.Pointer[targetMemo]
	conns      atomic.Uint64  // numbers accepted connections
	bufs       sync.Pool      // *[]byte copy buffers for reverse-mode responses
	certs      certStore      // MITM leaf certificates by host
	own        ownConns       // local addresses of open upstream connections: loop detection
	hops       *hops          // loops through chains of taps (hops.go)
	bg         sync.WaitGroup // audit facts handed over off the request path; Serve waits for them

	// lastReqHead and lastRespHead are the relay's last request and
	// response heads with their audit headers redacted (headMemo):
	// memory only, like creds.
	lastReqHead, lastRespHead atomic.Pointer[headMemo]

	// probe is Config.Probe; heads holds, by exchange, when the response
	// head came of each exchange not yet handed over (SafeClock).
	probe   time.Duration
	headsMu sync.Mutex
	heads   map[*exchange]time.Time

	// aborted ends the drain of requests in flight at once (Abort).
	aborted     context.Context
	abortCancel context.CancelFunc

	// parked counts the relay's harness connections waiting for a request
	// without read buffers (relayConn.awaitRequest).
	parked atomic.Int64

	// Reverse mode's relay (relay.go).
	upstreamAddr  string      // host:port to dial
	upstreamBase  string      // scheme://host, for the audit envelope
	upstreamHost  []byte      // the Host value sent upstream
	rewriteTarget bool        // --upstream has a path or query: targets are rewritten
	relayTLS      *tls.Config // verified TLS for an https upstream, HTTP/1.1 only

	inject *inject.Plan // Config.Inject
}

type connKey struct{}

// netConnKey holds a forward-mode request's harness connection in its
// context, for the read deadlines of a slow body.
type netConnKey struct{}

// New builds a Proxy from cfg.
func New(cfg Config) (*Proxy, error) {
	if cfg.Auditor == nil {
		return nil, errors.New("httpproxy: Config.Auditor is required")
	}
	if cfg.Forward == (cfg.Upstream != nil) {
		return nil, errors.New("httpproxy: give exactly one of an upstream URL and forward mode")
	}
	if cfg.Upstream != nil && cfg.Upstream.Scheme != "http" && cfg.Upstream.Scheme != "https" {
		return nil, fmt.Errorf("httpproxy: upstream %q is not an http:// or https:// URL", cfg.Upstream.Redacted())
	}
	if cfg.MITMCA != nil && !cfg.Forward {
		return nil, errors.New("httpproxy: a MITM CA is only used in forward mode")
	}
	if cfg.Inject != nil && cfg.Forward {
		return nil, errors.New("httpproxy: --inject is for reverse mode (--upstream)")
	}
	p := &Proxy{
		upstream: cfg.Upstream,
		forward:  cfg.Forward,
		maxAudit: cfg.MaxAuditBody,
		drain:    cfg.Drain,
		auditor:  cfg.Auditor,
		metrics:  cfg.Metrics,
		log:      cfg.Log,
		inject:   cfg.Inject,
	}
	p.aborted, p.abortCancel = context.WithCancel(context.Background())
	p.probe, p.heads = cfg.Probe, make(map[*exchange]time.Time)
	if p.maxAudit <= 0 {
		p.maxAudit = DefaultMaxAuditBody
	}
	if p.drain <= 0 {
		p.drain = DefaultDrain
	}
	if p.readTimeout = cfg.ReadTimeout; p.readTimeout <= 0 {
		p.readTimeout = DefaultReadTimeout
	}
	timeout := cfg.UpstreamTimeout
	if timeout <= 0 {
		timeout = DefaultUpstreamTimeout
	}
	p.creds.Configure(cfg.Redact, cfg.MaxCredentials)
	p.creds.Forgotten = func(max int) {
		// Off the request path: Note waits for room in the audit queue.
		// Serve waits for it before returning, so the fact is not lost.
		p.bg.Add(1)
		go func() {
			defer p.bg.Done()
			p.auditor.Note(tap.Note{Kind: tap.NoteForgotten, Time: time.Now(), Detail: fmt.Sprintf(
				"ahp-tap remembers at most %d credentials for redaction and has begun to forget the oldest: one of those appearing in a body from now on is neither redacted nor reported (AUTH-1)", max)})
		}()
	}
	p.hops = newHops()
	p.bufs.New = func() any { b := make([]byte, 32<<10); return &b }
	p.tr = &http.Transport{
		// Proxy is nil: the tap's own HTTP_PROXY must not reroute (or loop)
		// the traffic it forwards.
		DialContext:           p.own.dialer(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}),
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		// Bodies pass through as they are: no Accept-Encoding is added and
		// nothing is decompressed.
		DisableCompression:  true,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	if u := p.upstream; u != nil {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		p.upstreamAddr = net.JoinHostPort(u.Hostname(), port)
		p.upstreamBase = u.Scheme + "://" + u.Host
		p.upstreamHost = []byte(u.Host)
		p.rewriteTarget = (u.Path != "" && u.Path != "/") || u.RawQuery != ""
		p.relayTLS = &tls.Config{
			RootCAs:            cfg.RootCAs,
			MinVersion:         tls.VersionTLS12,
			ServerName:         u.Hostname(),
			NextProtos:         []string{"http/1.1"}, // the relay speaks HTTP/1.1 upstream
			ClientSessionCache: tls.NewLRUClientSessionCache(64),
		}
	}
	gp := goproxy.NewProxyHttpServer()
	gp.Tr = p.tr
	gp.ConnectDial = nil // dial directly with Tr.DialContext, never through the tap's own proxy settings
	gp.KeepHeader = true
	gp.KeepAcceptEncoding = true
	gp.PreventCanonicalization = true
	gp.Verbose = false
	gp.Logger = goproxyLogger{p}
	if p.forward {
		gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "ahp-tap is a forward proxy here: set HTTP_PROXY/HTTPS_PROXY to it rather than posting to it", http.StatusBadRequest)
		})
		var mitm func(string, *goproxy.ProxyCtx) (*tls.Config, error)
		if cfg.MITMCA != nil {
			gp.CertStore = &p.certs
			mitm = goproxy.TLSConfigFromCA(cfg.MITMCA)
		}
		gp.OnRequest().HandleConnectFunc(func(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
			ctx.UserData = connID(ctx.Req.Context())
			if mitm != nil {
				return &goproxy.ConnectAction{Action: goproxy.ConnectMitm, TLSConfig: mitm}, host
			}
			// Without a CA the tunnel is opaque: bytes pass untouched and
			// unaudited.
			return goproxy.OkConnect, host
		})
		gp.OnRequest().DoFunc(func(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
			conn, mitmd := ctx.UserData.(string) // set by the CONNECT handler for intercepted requests
			if !mitmd {
				conn = connID(req.Context())
			}
			var pace func(int64)
			if nc, ok := req.Context().Value(netConnKey{}).(net.Conn); ok && !mitmd {
				// Plain HTTP: a slow body is bounded as in reverse mode.
				// (An intercepted request is read by goproxy from its
				// tunnel: heads only are bounded there.)
				pace = p.bodyPace(nc)
			}
			ctx.RoundTripper = goproxy.RoundTripperFunc(func(req *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
				resp := p.forwardRoundTrip(req, conn, pace)
				if rb, ok := resp.Body.(*responseBody); ok {
					// Plain HTTP runs on the server's goroutine, where a
					// panic aborts the response; goproxy's MITM loop has
					// no such recovery, so there it only closes the tunnel.
					rb.abort = !mitmd
				}
				return resp, nil
			})
			return req, nil
		})
	} else {
		// A harness posting to the tap as if it were the backend sends a
		// relative URL: goproxy hands those to NonproxyHandler.
		gp.NonproxyHandler = http.HandlerFunc(p.reverse)
	}
	p.gp = gp
	return p, nil
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && p.own.has(r.RemoteAddr+">"+local.String()) {
		// The request came from one of the tap's own upstream connections:
		// the upstream (or the forward target) is the tap itself (issue 8).
		p.log.Warn().Str("conn", connID(r.Context())).Msg("a request from this tap to itself; answering 508 Loop Detected")
		w.Header().Set("Connection", "close")
		http.Error(w, strings.TrimSuffix(loopMessage, "\n"), http.StatusLoopDetected)
		return
	}
	if !p.forward && (r.Method == http.MethodConnect || r.URL.IsAbs()) {
		// Reverse mode is not an open proxy.
		http.Error(w, "ahp-tap is a reverse proxy here: post to it as if it were the backend", http.StatusBadRequest)
		return
	}
	p.gp.ServeHTTP(w, r)
}

// Serve accepts connections on ln until ctx ends, then stops accepting,
// waits up to the drain bound for requests in flight, and returns. It does
// not close the auditor. Reverse mode is served by the relay (relay.go),
// forward mode by net/http and goproxy.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	if p.upstream != nil && p.inject == nil {
		return p.serveRelay(ctx, ln)
	}
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: p.readTimeout,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          log.New(serverLog{p}, "", 0),
		ConnContext: func(ctx context.Context, nc net.Conn) context.Context {
			ctx = context.WithValue(ctx, netConnKey{}, nc)
			return context.WithValue(ctx, connKey{}, tap.HTTPConn(p.conns.Add(1)))
		},
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(p.aborted, p.drain)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		p.log.Warn().Dur("drain", p.drain).Msg("requests still in flight after the drain bound; closing their connections")
		_ = srv.Close()
	}
	<-errc
	p.tr.CloseIdleConnections()
	p.bg.Wait()
	return nil
}

// SafeClock is the time up to which every frame the proxy has read has
// been handed to the auditor, or will be with a later time: now, or just
// before the earliest response head of an exchange not yet handed over.
// The auditor tells its session the time with it (tap.Session.Clock), so
// that a deadline is never judged passed before an answer that came in
// time is audited.
func (p *Proxy) SafeClock(now time.Time) time.Time {
	p.headsMu.Lock()
	defer p.headsMu.Unlock()
	for _, t := range p.heads {
		if !t.After(now) {
			now = t.Add(-time.Nanosecond)
		}
	}
	return now
}

// Abort ends the drain of Serve at once: the connections of requests
// still in flight are closed (a second termination signal, issue 21 item
// 10: the tap exits now, and still closes its log and capture). It may
// be called before, during or after Serve, from any goroutine.
func (p *Proxy) Abort() { p.abortCancel() }

// Close releases the upstream connections. It is idempotent.
func (p *Proxy) Close() error {
	p.tr.CloseIdleConnections()
	return nil
}

func connID(ctx context.Context) string {
	if s, ok := ctx.Value(connKey{}).(string); ok {
		return s
	}
	return "http"
}

// target is the upstream URL for a request path in reverse mode: the
// upstream's path followed by the request's path; the request's query
// follows the upstream's.
func (p *Proxy) target(in *url.URL) *url.URL {
	u := *p.upstream
	u.Path = joinPath(p.upstream.Path, in.Path)
	if p.upstream.RawPath != "" || in.RawPath != "" {
		u.RawPath = joinPath(p.upstream.EscapedPath(), in.EscapedPath())
	}
	switch {
	case p.upstream.RawQuery == "":
		u.RawQuery = in.RawQuery
	case in.RawQuery != "":
		u.RawQuery = p.upstream.RawQuery + "&" + in.RawQuery
	}
	u.Fragment, u.RawFragment = "", ""
	return &u
}

func joinPath(base, p string) string {
	switch {
	case base == "" || base == "/":
		if p == "" {
			return "/"
		}
		return p
	case p == "" || p == "/":
		if p == "/" && !strings.HasSuffix(base, "/") {
			return base + "/"
		}
		return base
	}
	return strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(p, "/")
}

// reverse is reverse mode: forward r to the upstream, stream the answer back.
func (p *Proxy) reverse(w http.ResponseWriter, r *http.Request) {
	u := p.target(r.URL)
	x := p.newExchange(r, connID(r.Context()), u.Redacted())
	out := &http.Request{
		Method:     r.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		// The harness's headers go upstream as they are; only Host names
		// the upstream, as it must for TLS and virtual hosting.
		Host:          u.Host,
		ContentLength: r.ContentLength,
		Body:          http.NoBody,
	}
	out = out.WithContext(r.Context())
	var body *requestBody
	if r.ContentLength != 0 {
		body = &requestBody{rc: r.Body, x: x, pace: p.bodyPace(http.NewResponseController(w))}
		out.Body = body
	}
	var (
		req   inject.Request
		fault inject.Fault
		hit   bool
	)
	if p.inject != nil && body != nil {
		var err error
		if body.rc, req, fault, hit, err = p.decideBody(r); err != nil {
			// The harness broke off its body: what was read goes on and
			// the transport sees the same failure.
			hit = false
		}
	}
	out.Header = withoutHopHeaders(r.Header)
	keepUserAgent(out.Header)
	decided := time.Now()
	resp := p.roundTrip(out, x, body)
	x.mu.Lock()
	answered := x.failure == nil // the upstream answered: the fault replaces or holds its answer
	if hit && answered {
		x.inj = x.injected(tap.NoteInjected, fault, req, inject.Describe(fault, req))
		x.inj.Time = decided
	}
	x.mu.Unlock()
	if hit && answered {
		p.act(w, r, x, resp, fault, req)
		return
	}
	p.writeResponse(w, x, resp)
}

// writeResponse forwards resp to the harness as it comes and finishes the
// exchange.
func (p *Proxy) writeResponse(w http.ResponseWriter, x *exchange, resp *http.Response) {
	defer resp.Body.Close() // finishes the exchange
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs // direct assignment: names stay as the upstream wrote them
	}
	w.WriteHeader(resp.StatusCode)
	bp := p.bufs.Get().(*[]byte)
	// What the upstream flushed goes on at once (issue 8).
	n, readErr, writeErr := copyBody(flushingWriter{w}, resp.Body, *bp)
	p.bufs.Put(bp)
	switch {
	case readErr != nil:
		p.log.Warn().Str("conn", x.conn).Str("upstream", x.upstreamText()).Int64("bytes", n).
			Msg(p.creds.Text("the upstream broke off the response body: " + readErr.Error()))
		// Abort the harness's response rather than end it cleanly: a
		// short body must look broken, never complete. The deferred Close
		// still finishes the exchange (as a truncated audit copy).
		panic(http.ErrAbortHandler)
	case writeErr != nil:
		p.log.Debug().Str("conn", x.conn).Msg(p.creds.Text("the harness stopped reading the response: " + writeErr.Error()))
		return
	}
	for k, vs := range resp.Trailer {
		h[http.TrailerPrefix+k] = vs
	}
}

// flushingWriter flushes every write to the harness.
type flushingWriter struct{ w http.ResponseWriter }

func (f flushingWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = http.NewResponseController(f.w).Flush()
	}
	return n, err
}

// copyBody copies src to dst like io.CopyBuffer, and says which side
// failed: a read error is the upstream's, a write error the harness's.
func copyBody(dst io.Writer, src io.Reader, buf []byte) (n int64, readErr, writeErr error) {
	for {
		nr, rerr := src.Read(buf)
		if nr > 0 {
			nw, werr := dst.Write(buf[:nr])
			n += int64(nw)
			if werr == nil && nw != nr {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return n, nil, werr
			}
		}
		if rerr == io.EOF {
			return n, nil, nil
		}
		if rerr != nil {
			return n, rerr, nil
		}
	}
}

// forwardRoundTrip is forward mode (plain HTTP, or HTTPS with MITM):
// goproxy calls it to send req upstream.
func (p *Proxy) forwardRoundTrip(req *http.Request, conn string, pace func(int64)) *http.Response {
	x := p.newExchange(req, conn, req.URL.Redacted())
	var body *requestBody
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength != 0 {
		body = &requestBody{rc: req.Body, x: x, pace: pace}
		req.Body = body
	}
	// Hop-by-hop fields stop here; Proxy-Authorization was for this proxy
	// and never reaches the origin (issue 8).
	req.Header = withoutHopHeaders(req.Header)
	keepUserAgent(req.Header)
	return p.roundTrip(req, x, body)
}

// withoutHopHeaders returns h without the hop-by-hop fields (RFC 9110
// §7.6.1): Connection and the fields it names, Keep-Alive, TE, Upgrade,
// Proxy-Connection, Proxy-Authorization, Proxy-Authenticate,
// Proxy-Authentication-Info and HTTP2-Settings. h itself is returned when
// it has none; it is never modified.
func withoutHopHeaders(h http.Header) http.Header {
	drop := func(k string) bool {
		for _, n := range hopHeaderNames {
			if k == n {
				return true
			}
		}
		for _, v := range h["Connection"] {
			for _, opt := range strings.Split(v, ",") {
				if o := http.CanonicalHeaderKey(strings.TrimSpace(opt)); o == k && o != "Content-Length" && o != "Host" {
					return true
				}
			}
		}
		return false
	}
	var out http.Header
	for k := range h {
		if !drop(http.CanonicalHeaderKey(k)) {
			continue
		}
		if out == nil {
			out = h.Clone()
		}
		delete(out, k)
	}
	if out == nil {
		return h
	}
	return out
}

// keepUserAgent stops the transport from adding its own User-Agent to a
// request that had none: the header set goes upstream unchanged.
func keepUserAgent(h http.Header) {
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""}
	}
}

// roundTrip sends req upstream. It always returns a response: the
// upstream's, with a body that feeds the audit copy and finishes the
// exchange on Close, or ahp-tap's own 502/504 when the upstream failed.
// Redirects are returned, never followed (a Transport does not follow them).
func (p *Proxy) roundTrip(req *http.Request, x *exchange, body *requestBody) *http.Response {
	resp, err := p.tr.RoundTrip(req)
	if err != nil {
		return p.failed(req, x, body, err)
	}
	x.responseHeaders(resp)
	resp.Header = withoutHopHeaders(resp.Header)
	// Keep net/http from adding headers the upstream did not send.
	if _, ok := resp.Header["Content-Type"]; !ok {
		resp.Header["Content-Type"] = nil
	}
	if _, ok := resp.Header["Date"]; !ok {
		resp.Header["Date"] = nil
	}
	resp.Body = &responseBody{rc: resp.Body, x: x}
	return resp
}

// failed answers the harness when the upstream could not be reached or
// did not answer in time, and records an operational failure.
func (p *Proxy) failed(req *http.Request, x *exchange, body *requestBody, err error) *http.Response {
	gone := req.Context().Err() != nil && errors.Is(err, context.Canceled)
	if body != nil && !gone {
		body.drain(int64(p.maxAudit))
	}
	status, msg := p.upstreamFailure(x, err, gone)
	resp := &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "Content-Length": {strconv.Itoa(len(msg))}},
		ContentLength: int64(len(msg)),
		Request:       req,
	}
	resp.Body = &responseBody{rc: io.NopCloser(strings.NewReader(msg)), x: x}
	return resp
}

// upstreamFailure records why the upstream failed an exchange (a note the
// exchange submits after its request frame, metrics, the diagnostic log)
// and returns the status and the one-line text ahp-tap answers with. gone
// says the harness went away first (499, an info fact).
func (p *Proxy) upstreamFailure(x *exchange, err error, gone bool) (status int, msg string) {
	status, kind, cause := classify(err, p.tr.ResponseHeaderTimeout)
	cause = p.creds.Text(cause)
	if gone {
		status, kind, cause = 499, "harness_gone", "the harness closed the connection before the upstream answered"
	}
	now := time.Now()
	n := &tap.Note{Kind: tap.NoteHarnessGone, Time: now, Conn: x.conn, Detail: cause}
	if !gone {
		n = &tap.Note{Kind: tap.NoteUpstreamFailure, Time: now, Conn: x.conn, Detail: cause,
			HTTP: &tap.HTTPMeta{Status: status, Upstream: x.upstreamText(),
				LatencyMs: float64(now.Sub(x.start).Microseconds()) / 1000}}
	}
	x.mu.Lock()
	x.failure = n // finish submits it after the request frame
	x.mu.Unlock()
	p.metrics.countRequest(x.httpVerb, status)
	p.metrics.countFailure(kind)
	if gone {
		p.log.Debug().Str("conn", x.conn).Msg(cause)
	} else {
		p.log.Warn().Str("conn", x.conn).Str("upstream", x.upstreamText()).Int("status", status).Msg(cause)
	}
	return status, "ahp-tap: " + cause + "\n"
}

// goproxyLogger sends goproxy's messages to the diagnostic log at debug
// level, with credentials redacted.
type goproxyLogger struct{ p *Proxy }

func (l goproxyLogger) Printf(format string, v ...any) {
	l.p.log.Debug().Msg(l.p.creds.Text(strings.TrimSpace(fmt.Sprintf(format, v...))))
}

// serverLog sends net/http's server errors to the diagnostic log.
type serverLog struct{ p *Proxy }

func (l serverLog) Write(b []byte) (int, error) {
	l.p.log.Debug().Msg(l.p.creds.Text(strings.TrimSpace(string(b))))
	return len(b), nil
}
