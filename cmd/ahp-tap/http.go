package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/httpproxy"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/tap"
)

// httpAuditQueue is the HTTP tap's audit queue, in frames and notes: room
// for bursts of a few thousand exchanges (about 2 KiB each at 1 KiB bodies)
// before audit copies are dropped.
const httpAuditQueue = 16384

// runHTTP runs the HTTP tap: a reverse proxy in front of --upstream, or a
// forward proxy (--forward) the harness reaches through HTTP_PROXY and
// HTTPS_PROXY. It serves until SIGINT/SIGTERM, then stops accepting,
// finishes the requests in flight (up to --drain), flushes the log and the
// capture, prints a summary and exits 0.
func (m *Main) runHTTP(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	var ef engineFlags
	ef.register(fs)
	listen := fs.String("listen", "127.0.0.1:8787", "`ADDR` to listen on (the harness's registration url points here)")
	upstream := fs.String("upstream", "", "backend `URL` (reverse mode): a request for path P goes to URL's path followed by P")
	forward := fs.Bool("forward", false, "forward-proxy mode: the harness sets HTTP_PROXY/HTTPS_PROXY to the tap")
	mitmCA := fs.String("mitm-ca", "", "with --forward: terminate HTTPS with the CA in `DIR` (made by 'ahp-tap ca init DIR') and audit it; without it CONNECT is tunnelled unaudited")
	upstreamCA := fs.String("upstream-ca", "", "trust only the CA certificates in PEM `FILE` for the upstream's TLS (default: the system's roots)")
	logPath := fs.String("log", "", "append findings to the violation log at `PATH` (- for stderr; created 0600)")
	conductDir := fs.String("conduct", "", "feed the live conduct timeline of the registration's taps sharing `DIR` (needs --registration and --hook; docs/conduct.md)")
	capPath := fs.String("capture", "", "record every audited body and note to the capture file `PATH` (created 0600; credentials redacted)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics")
	maxAudit := fs.Int("max-audit-body", httpproxy.DefaultMaxAuditBody, "cap the audit copy of each body at `BYTES`; larger bodies are forwarded whole and reported unchecked (TAP-1)")
	upTimeout := fs.Duration("upstream-timeout", httpproxy.DefaultUpstreamTimeout, "answer 504 when the upstream sends no response headers within `D`")
	mode := auditBestEffort
	fs.Var(&mode, "audit", "`MODE`: best-effort (drop audit copies rather than slow traffic) or complete (requests wait for the audit: every body checked, at the cost of latency and throughput)")
	budgetFlag := fs.String("audit-budget", "64MiB", "cap the bytes of the audit copies of bodies, in flight and waiting for the audit, at `SIZE` (1MiB to 64GiB; beyond it a body is audited only as its first 4 KiB or dropped from the audit, and reported, TAP-1; with --audit complete requests wait for room instead)")
	drain := fs.Duration("drain", httpproxy.DefaultDrain, "on SIGINT/SIGTERM, wait up to `D` for requests in flight")
	readTimeout := fs.Duration("read-timeout", httpproxy.DefaultReadTimeout, "close a harness connection whose request head has not arrived within `D`, or whose body arrives slower (D, plus a second per 16 KiB received)")
	var redact httpproxy.Redaction
	fs.Func("redact-header", "also redact the values of header `NAME` in captures and logs, and find them in bodies like a bearer token (repeatable)", func(v string) error {
		if v == "" || strings.ContainsAny(v, " \t:") {
			return fmt.Errorf("%q is not a header name", v)
		}
		redact.Headers = append(redact.Headers, v)
		return nil
	})
	fs.BoolVar(&redact.NoDefaults, "no-redact", false, "record Cookie, Set-Cookie, X-Api-Key, Proxy-Authorization and credential query parameters as they are (the Authorization credential is always redacted)")
	console := fs.Bool("console", false, consoleHelp)
	summary := fs.Bool("summary", isTerminal(m.Stderr), summaryHelp)
	var otlpf otlpFlags
	otlpf.register(fs)
	verbose := fs.Bool("v", false, "debug logging on stderr (goproxy and connection messages, credentials redacted)")
	allowRemote := fs.Bool("allow-remote", false, "let --forward and --metrics listen on an address other than loopback (anyone who can reach it may use the proxy or read the metrics)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("http: unexpected argument %q", fs.Arg(0))
	}
	h := &httpRun{m: m, ef: ef, listen: *listen, upstream: *upstream, forward: *forward, mitmCA: *mitmCA, upstreamCA: *upstreamCA,
		logPath: *logPath, conductDir: *conductDir, capPath: *capPath, metricsAddr: *metricsAddr, maxAudit: *maxAudit,
		upTimeout: *upTimeout, mode: mode, budgetFlag: *budgetFlag, drain: *drain, readTimeout: *readTimeout, redact: redact,
		console: *console, summary: *summary, otlpf: otlpf, verbose: *verbose, allowRemote: *allowRemote}
	return h.run(ctx)
}

// httpRun is `ahp-tap http` once its flags are read.
type httpRun struct {
	m                                                     *Main
	ef                                                    engineFlags
	listen, upstream, mitmCA, upstreamCA                  string
	logPath, conductDir, capPath, metricsAddr, budgetFlag string
	forward, console, summary, verbose, allowRemote       bool
	maxAudit                                              int
	upTimeout, drain, readTimeout                         time.Duration
	mode                                                  auditMode
	redact                                                httpproxy.Redaction
	otlpf                                                 otlpFlags

	budget int64 // parsed --audit-budget
}

// proxyConfig checks the flags' values and returns the proxy's
// configuration (exit 2 with a one-line reason for a bad one).
func (h *httpRun) proxyConfig() (httpproxy.Config, error) {
	var cfg httpproxy.Config
	if h.mode == auditOff {
		return cfg, usageError("http: --audit is best-effort or complete")
	}
	if h.conductDir != "" && (h.ef.registration == "" || h.ef.hook == "") {
		return cfg, usageError("http: --conduct needs --registration and --hook: the conduct timeline places each link by its hook")
	}
	budget, err := parseBudget(h.budgetFlag)
	if err != nil {
		return cfg, err
	}
	h.budget = budget
	if h.maxAudit <= 0 || h.maxAudit > maxAuditLine { // before the budget shrinks it to fit
		return cfg, usageError("http: --max-audit-body %d is out of range (1 to %d bytes)", h.maxAudit, maxAuditLine)
	}
	if int64(h.maxAudit) > budget/2 {
		h.maxAudit = int(budget / 2) // a request and its response must fit the budget together
	}
	if h.readTimeout <= 0 {
		return cfg, usageError("http: --read-timeout must be positive")
	}
	cfg = httpproxy.Config{Forward: h.forward, MaxAuditBody: h.maxAudit, UpstreamTimeout: h.upTimeout, Drain: h.drain, Redact: h.redact,
		ReadTimeout: h.readTimeout}
	switch {
	case h.forward && h.upstream != "":
		return cfg, usageError("http: give --upstream (reverse mode) or --forward, not both")
	case !h.forward && h.upstream == "":
		return cfg, usageError("http: --upstream URL is required (or --forward)")
	case h.mitmCA != "" && !h.forward:
		return cfg, usageError("http: --mitm-ca needs --forward")
	case h.upTimeout <= 0 || h.upTimeout > maxDrain:
		return cfg, usageError("http: --upstream-timeout %s is out of range (more than 0, at most %s)", h.upTimeout, maxDrain)
	case h.drain <= 0 || h.drain > maxDrain:
		return cfg, usageError("http: --drain %s is out of range (more than 0, at most %s)", h.drain, maxDrain)
	}
	return cfg, h.trust(&cfg)
}

// trust sets the upstream, its CA pool and the interception CA of cfg.
func (h *httpRun) trust(cfg *httpproxy.Config) error {
	if h.upstream != "" {
		u, err := url.Parse(h.upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError("http: --upstream %q is not an absolute http:// or https:// URL", h.upstream)
		}
		if u.User != nil {
			return usageError("http: --upstream must not carry credentials; the harness sends its own Authorization header")
		}
		cfg.Upstream = u
	}
	if h.upstreamCA != "" {
		pem, err := os.ReadFile(h.upstreamCA)
		if err != nil {
			return usageError("http: --upstream-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return usageError("http: --upstream-ca %s holds no PEM certificate", h.upstreamCA)
		}
		cfg.RootCAs = pool
	}
	if h.mitmCA != "" {
		ca, err := httpproxy.LoadCA(h.mitmCA)
		if err != nil {
			return usageError("http: --mitm-ca: %v", err)
		}
		cfg.MITMCA = ca
	}
	return nil
}

// run runs the tap: a reverse or forward proxy, serving until ctx ends.
func (h *httpRun) run(ctx context.Context) error {
	m := h.m
	cfg, err := h.proxyConfig()
	if err != nil {
		return err
	}
	l, err := h.ef.load()
	if err != nil {
		return err
	}
	otlpx, err := h.otlpf.open(h.capPath, m.Stderr)
	if err != nil {
		return err
	}
	level := zerolog.WarnLevel
	if h.verbose {
		level = zerolog.DebugLevel
	}
	// m.diag() never blocks (issue 8 item 8): with stderr not read and the
	// upstream failing, a diagnostic per request must not hold requests.
	cfg.Log = zerolog.New(printableConsole(m.diag())).
		Level(level).With().Timestamp().Str("tap", "http").Logger()
	ln, mln, err := h.listeners(cfg.Forward)
	if err != nil {
		return err
	}
	defer ln.Close()
	if mln != nil {
		defer mln.Close()
	}
	tuneHTTPMemory(h.budget, h.maxAudit)
	l.cfg.Transport = tap.HTTP
	var auditor *tap.Auditor
	metrics := httpproxy.NewMetrics(func() uint64 { return auditor.Dropped() })
	metrics.CountCuts(func() uint64 { return auditor.Cuts() })
	metrics.ZeroFindings(checkIDs())
	if otlpx != nil {
		metrics.Register(otlpx.Collectors()...)
	}
	out, err := h.output(l, otlpx, metrics)
	if err != nil {
		return err
	}
	session := l.newSession(out.SessionConfig(tap.SessionConfig{Config: l.cfg})) // reports the registration's findings
	// The audit yields the CPU to forwarding (BENCHMARKS.md, http, run E).
	// Deadlines are judged as they pass (issue 21 item 8): the proxy
	// hands over a request unanswered by the shortest deadline, and the
	// auditor tells the session the time the proxy vouches for.
	var proxyRef atomic.Pointer[httpproxy.Proxy]
	clock := func(now time.Time) time.Time {
		if p := proxyRef.Load(); p != nil {
			return p.SafeClock(now)
		}
		return now
	}
	cfg.Probe = session.Config().MinDeadline()
	auditor = session.Audit(tap.AuditorConfig{Queue: httpAuditQueue, Budget: h.budget, Complete: h.mode == auditComplete, Begin: httpproxy.LowerAuditPriority, Clock: clock})
	cfg.Auditor, cfg.Metrics = auditor, metrics
	proxy, err := httpproxy.New(cfg)
	proxyRef.Store(proxy)
	if err != nil {
		auditor.Close()
		out.Close(time.Now())
		return usageError("http: %v", err)
	}
	msrv := h.serveMetrics(mln, metrics)
	h.announce(ln, cfg)
	serveErr, closeErr := h.serve(ctx, ln, proxy, msrv, auditor, out)
	if h.summary {
		_ = out.Summary(auditor.Dropped(), session).WriteText(m.diag())
	}
	switch {
	case serveErr != nil:
		return &exitError{code: 2, msg: fmt.Sprintf("http: %v", serveErr)}
	case closeErr != nil:
		return &exitError{code: 2, msg: fmt.Sprintf("http: %v", closeErr)}
	}
	return nil
}

// listeners listens for harnesses on --listen and for scrapes on
// --metrics (nil without). Issue 8 item 10: a forward proxy or a metrics
// endpoint off loopback is open to everyone who can reach it.
func (h *httpRun) listeners(forward bool) (net.Listener, net.Listener, error) {
	ln, err := net.Listen("tcp", h.listen)
	if err != nil {
		return nil, nil, usageError("http: %v", err)
	}
	if forward && !isLoopback(ln.Addr()) {
		if !h.allowRemote {
			ln.Close()
			return nil, nil, usageError("http: --forward on %s (not loopback) would be an open proxy for everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", ln.Addr())
		}
		fmt.Fprintf(h.m.diag(), "ahp-tap http: WARNING: --allow-remote: the forward proxy on %s is open to everyone who can reach that address\n", ln.Addr())
	}
	mln, err := listenMetrics("http", h.metricsAddr, h.allowRemote, h.m.diag())
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, mln, nil
}

// tuneHTTPMemory sets the collector for the audit of bodies of at most
// maxAudit bytes within budget, unless GOGC or GOMEMLIMIT say otherwise.
func tuneHTTPMemory(budget int64, maxAudit int) {
	if os.Getenv("GOGC") == "" {
		// The audit decodes every body into a tree; collecting less often
		// leaves more CPU to forwarding for a little more memory
		// (BENCHMARKS.md, http section). GOGC in the environment wins.
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// GOGC 400 alone lets the heap grow to five times the live data
		// (1.5 GiB in the 10-minute soak, RELIABILITY.md). A soft limit
		// keeps collections rare while the heap is small and bounds it:
		// the audit budget (copies in flight, queued and being checked),
		// the decoded tree of the one body being checked (at most
		// --max-audit-body), and 80 MiB for the rest: per-connection
		// buffers, the 4 KiB prefixes of copies the budget cut, the
		// runtime. 1,000 concurrent 16 MiB uploads peak at about 200 MiB
		// of RSS with it, 260 MiB with budget+128MiB (BENCHMARKS.md,
		// Audit memory). GOMEMLIMIT in the environment wins.
		debug.SetMemoryLimit(budget + int64(maxAudit) + 80<<20)
	}
}

// output opens the way out: log, console, OTLP, metrics, capture, the live
// conduct client (package output).
func (h *httpRun) output(l *loaded, otlpx *otlpexport.Exporter, metrics *httpproxy.Metrics) (*output.Output, error) {
	oc := output.Config{Name: "http", Diag: h.m.diag(), Log: h.logPath, OTLP: otlpx, OTLPClose: httpCloseTimeout,
		Sinks: []tap.Sink{metrics.Sink()}, SummaryLimit: 1, // counts only: a long-running tap must not grow
		Capture: h.capPath, Header: capture.Header{Tool: "ahp-tap " + version, Snapshot: l.cfg.Snapshot, Transport: tap.HTTP,
			Registration: h.ef.registration, Hook: h.ef.hook, TimeoutMs: h.ef.timeout.Milliseconds(), RegistrationDoc: l.regDoc}}
	if h.console {
		oc.Console = h.m.Stderr
	}
	oc.Conduct = conductClientFor(h.conductDir, h.ef.registration, h.ef.hook, l, h.m.diag())
	out, err := output.Open(oc)
	if err != nil {
		otlpx.Close(0)
		return nil, usageError("http: %v", err)
	}
	return out, nil
}

// serveMetrics serves the metrics on mln (nil: none).
func (h *httpRun) serveMetrics(mln net.Listener, metrics *httpproxy.Metrics) *http.Server {
	if mln == nil {
		return nil
	}
	msrv := &http.Server{Handler: metrics.Mux(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = msrv.Serve(mln) }()
	fmt.Fprintf(h.m.diag(), "ahp-tap http: metrics on http://%s/metrics\n", mln.Addr())
	return msrv
}

// announce says where the tap listens and what it forwards to.
func (h *httpRun) announce(ln net.Listener, cfg httpproxy.Config) {
	diag := h.m.diag()
	if !isLoopback(ln.Addr()) {
		// AHP-HTTP-001: plain http is for loopback only; the harness's
		// bearer token would cross the network in clear.
		fmt.Fprintf(diag, "ahp-tap http: warning: listening on %s, not loopback: harnesses reach the tap over plain http, credentials in clear\n", ln.Addr())
	}
	if cfg.Forward {
		mode := "HTTPS CONNECT tunnelled unaudited"
		if cfg.MITMCA != nil {
			mode = "HTTPS intercepted with the CA in " + h.mitmCA
		}
		fmt.Fprintf(diag, "ahp-tap http: forward proxy on %s (%s); set HTTP_PROXY/HTTPS_PROXY=http://%s\n", ln.Addr(), mode, ln.Addr())
	} else {
		printable.Fprintf(diag, "ahp-tap http: listening on http://%s, forwarding to %s\n", ln.Addr(), httpaudit.URL(cfg.Upstream.String()))
	}
}

// serve serves until ctx ends, then shuts down within --drain: requests
// in flight, then the audit queue, the log and the capture share it.
// What is left is counted (TAP-1) and said.
func (h *httpRun) serve(ctx context.Context, ln net.Listener, proxy *httpproxy.Proxy, msrv *http.Server, auditor *tap.Auditor, out *output.Output) (serveErr, closeErr error) {
	// Issue 8 item 5: --drain bounds the whole shutdown, from the signal.
	var stopAt atomic.Int64 // unix nanoseconds of the signal
	stopTiming := context.AfterFunc(ctx, func() { stopAt.Store(time.Now().UnixNano()) })
	defer stopTiming()
	// Issue 21 item 10: a second signal cuts the requests in flight and
	// the drain short, but the audit, the log and the capture (its end
	// record) still close, within forceBound.
	var forcedAt atomic.Int64
	force := func() { forcedAt.Store(time.Now().UnixNano()); proxy.Abort() }
	h.m.force.Store(&force)
	serveErr = proxy.Serve(ctx, ln)
	if msrv != nil {
		_ = msrv.Close()
	}
	proxy.Close()
	deadline := time.Now().Add(h.drain)
	if ns := stopAt.Load(); ns != 0 {
		deadline = time.Unix(0, ns).Add(h.drain)
	}
	left := func() time.Duration {
		d := deadline
		if ns := forcedAt.Load(); ns != 0 {
			d = time.Unix(0, ns).Add(forceBound)
		}
		return max(time.Until(d), minSinkClose)
	}
	if !auditor.CloseWithin(left()) { // drains the queue, end-of-stream rules, TAP-1 for drops
		fmt.Fprintf(h.m.diag(), "ahp-tap http: the audit did not finish within --drain %s; %d frames were not audited (TAP-1)\n", h.drain, auditor.Dropped())
	}
	closeErr = out.Close(time.Now().Add(left())) // conduct, OTLP, log, console, capture, within --drain
	return serveErr, closeErr
}

// isLoopback reports whether a listener's address is on loopback only (an
// unspecified address, 0.0.0.0 or ::, is every interface).
func isLoopback(a net.Addr) bool {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runCA manages the CA for HTTPS interception: `ahp-tap ca init DIR`.
func (m *Main) runCA(ctx context.Context, args []string) error {
	if len(args) != 2 || args[0] != "init" {
		return usageError("usage: ahp-tap ca init DIR")
	}
	dir := args[1]
	cert, err := httpproxy.InitCA(dir, time.Now())
	if err != nil {
		return usageError("ca init: %v", err)
	}
	fmt.Fprintf(m.Stdout, `Created an interception CA in %s (files 0600):
  certificate: %s
  private key: %s

Whoever trusts this certificate lets anyone holding the private key impersonate
ANY HTTPS site to them. Install it only in the trust store of the harness you
are testing (for example SSL_CERT_FILE or NODE_EXTRA_CA_CERTS for that one
process), never system-wide; keep the key private; delete the directory when done.
Then run: ahp-tap http --forward --mitm-ca %s
`, dir, cert, dir+"/"+httpproxy.CAKeyFile, dir)
	return nil
}

// printableConsole is the diagnostic log's console writer with every part
// made printable (internal/printable): a message or a field can quote a
// URL, a header or an error from the wire, and zerolog quotes only some
// field values (not the message, not C1 or bidi characters in objects).
func printableConsole(out io.Writer) zerolog.ConsoleWriter {
	text := func(i any) string {
		if i == nil {
			return ""
		}
		return printable.Line(fmt.Sprintf("%s", i))
	}
	name := func(i any) string { return printable.Line(fmt.Sprintf("%s=", i)) }
	return zerolog.ConsoleWriter{Out: out, NoColor: true, TimeFormat: time.RFC3339,
		FormatMessage: text, FormatFieldValue: text, FormatErrFieldValue: text, FormatFieldName: name, FormatErrFieldName: name}
}
