package main

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/httpproxy"
	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/wrap"
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
	var routeFlags []string
	fs.Func("route", "front one more upstream, as its own link: `hook=ID,listen=ADDR,upstream=URL,log=PATH,capture=PATH` (repeatable; replaces --listen, --upstream, --hook, --log and --capture; what 'ahp-tap wrap' prints for a registration with several HTTP backends)", func(v string) error {
		routeFlags = append(routeFlags, v)
		return nil
	})
	conductDir := fs.String("conduct", "", "feed the live conduct timeline of the registration's taps sharing `DIR` (needs --registration and --hook; docs/conduct.md)")
	capPath := fs.String("capture", "", "record every audited body and note to the capture file `PATH` (created 0600; credentials redacted)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics")
	uiAddr := fs.String("ui", "", "serve the live view (the HTML report's conversation, updated as frames and findings arrive) at http://`ADDR`/ (loopback only unless --allow-remote)")
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
	allowRemote := fs.Bool("allow-remote", false, "let --forward, --metrics and --ui listen on an address other than loopback (anyone who can reach it may use the proxy, read the metrics or watch the traffic)")
	var inj injectFlags
	inj.register(fs, inject.HTTP)
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("http: unexpected argument %q", fs.Arg(0))
	}
	h := &httpRun{m: m, fs: fs, ef: ef, listen: *listen, upstream: *upstream, forward: *forward, mitmCA: *mitmCA, upstreamCA: *upstreamCA,
		logPath: *logPath, conductDir: *conductDir, capPath: *capPath, metricsAddr: *metricsAddr, uiAddr: *uiAddr, maxAudit: *maxAudit,
		upTimeout: *upTimeout, mode: mode, budgetFlag: *budgetFlag, drain: *drain, readTimeout: *readTimeout, redact: redact,
		console: *console, summary: *summary, otlpf: otlpf, verbose: *verbose, allowRemote: *allowRemote, routeFlags: routeFlags, inj: inj}
	return h.run(ctx)
}

// httpRun is `ahp-tap http` once its flags are read.
type httpRun struct {
	m                                                             *Main
	fs                                                            *flag.FlagSet
	ef                                                            engineFlags
	listen, upstream, mitmCA, upstreamCA                          string
	logPath, conductDir, capPath, metricsAddr, uiAddr, budgetFlag string
	forward, console, summary, verbose, allowRemote               bool
	maxAudit                                                      int
	upTimeout, drain, readTimeout                                 time.Duration
	mode                                                          auditMode
	redact                                                        httpproxy.Redaction
	otlpf                                                         otlpFlags
	routeFlags                                                    []string
	inj                                                           injectFlags

	routes     []wrap.Route // one per link: --route, or the single-link flags
	upstreams  []*url.URL   // each route's upstream (nil entries with --forward)
	budget     int64        // parsed --audit-budget, shared by the routes
	linkBudget int64        // each route's share of it
}

// proxyConfig checks the flags' values and returns the proxy's
// configuration (exit 2 with a one-line reason for a bad one).
func (h *httpRun) proxyConfig() (httpproxy.Config, error) {
	var cfg httpproxy.Config
	if h.mode == auditOff {
		return cfg, usageError("http: --audit is best-effort or complete")
	}
	routes, err := httpRoutes(h.fs, &h.ef, h.routeFlags, h.conductDir)
	if err != nil {
		return cfg, err
	}
	if routes == nil {
		routes = []wrap.Route{{Hook: h.ef.hook, Listen: h.listen, Upstream: h.upstream, Log: h.logPath, Capture: h.capPath}}
	}
	h.routes = routes
	if h.budget, err = parseBudget(h.budgetFlag); err != nil {
		return cfg, err
	}
	if h.maxAudit <= 0 || h.maxAudit > maxAuditLine { // before the budget shrinks it to fit
		return cfg, usageError("http: --max-audit-body %d is out of range (1 to %d bytes)", h.maxAudit, maxAuditLine)
	}
	// Several routes share the budget: memory stays bounded by it,
	// whatever the number of upstreams.
	h.linkBudget = h.budget / int64(len(routes))
	if h.linkBudget < 1<<20 {
		return cfg, usageError("http: --audit-budget %s is less than 1MiB per route (%d routes)", h.budgetFlag, len(routes))
	}
	if int64(h.maxAudit) > h.linkBudget/2 {
		h.maxAudit = int(h.linkBudget / 2) // a request and its response must fit the budget together
	}
	if h.readTimeout <= 0 {
		return cfg, usageError("http: --read-timeout must be positive")
	}
	cfg = httpproxy.Config{Forward: h.forward, MaxAuditBody: h.maxAudit, UpstreamTimeout: h.upTimeout, Drain: h.drain, Redact: h.redact,
		ReadTimeout: h.readTimeout}
	switch {
	case h.inj.on() && h.forward:
		return cfg, usageError("http: --inject is for reverse mode (--upstream), not --forward")
	case h.forward && h.upstream != "":
		return cfg, usageError("http: give --upstream (reverse mode) or --forward, not both")
	case !h.forward && routes[0].Upstream == "":
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

// trust reads each route's upstream, and sets the upstreams' CA pool and
// the interception CA of cfg.
func (h *httpRun) trust(cfg *httpproxy.Config) error {
	h.upstreams = make([]*url.URL, len(h.routes))
	for i, r := range h.routes {
		if r.Upstream == "" {
			continue // --forward
		}
		what := "--upstream"
		if len(h.routeFlags) > 0 {
			what = "--route on " + r.Listen + ": upstream"
		}
		u, err := url.Parse(r.Upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError("http: %s %q is not an absolute http:// or https:// URL", what, httpaudit.URL(r.Upstream)) // credentials redacted
		}
		if u.User != nil {
			return usageError("http: %s must not carry credentials; the harness sends its own Authorization header", what)
		}
		h.upstreams[i] = u
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

// run runs the tap: a reverse or forward proxy per route, serving until
// ctx ends.
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
	if len(h.routeFlags) == 0 {
		h.routes[0].Hook = l.cfg.HookID // the registration's only hook when --hook was not given
	}
	for _, r := range h.routes[1:] {
		if tap.FindHook(l.cfg.Registration, r.Hook) == nil {
			return usageError("registration %s has no hook with id %q", h.ef.registration, r.Hook)
		}
	}
	level := zerolog.WarnLevel
	if h.verbose {
		level = zerolog.DebugLevel
	}
	// m.diag() never blocks (issue 8 item 8): with stderr not read and the
	// upstream failing, a diagnostic per request must not hold requests.
	cfg.Log = zerolog.New(printableConsole(m.diag())).
		Level(level).With().Timestamp().Str("tap", "http").Logger()
	links, mln, err := h.listeners(cfg.Forward)
	defer func() {
		for _, k := range links {
			k.ln.Close()
		}
	}()
	if err != nil {
		return err
	}
	if mln != nil {
		defer mln.Close()
	}
	ui, err := openUI("http", h.uiAddr, h.allowRemote, l.cfg.Snapshot, m.diag())
	if err != nil {
		return err
	}
	defer ui.close()
	tuneHTTPMemory(h.budget, int64(len(links))*int64(h.maxAudit))
	l.cfg.Transport = tap.HTTP
	metrics := httpMetrics(links)
	var exporters []*otlpexport.Exporter
	for i, k := range links {
		x, err := h.openLink(i, k, l, cfg, metrics, ui)
		if err != nil {
			closeHTTPLinks(links, time.Now())
			return err
		}
		if x != nil {
			exporters = append(exporters, x)
		}
	}
	if len(exporters) > 0 {
		metrics.Register(otlpexport.Collectors(exporters...)...) // one series each, summed over the routes
	}
	ui.serve()
	msrv := h.serveMetrics(mln, metrics)
	h.announce(links, cfg)
	serveErr, closeErr := h.serve(ctx, links, msrv)
	if h.summary {
		for _, k := range links {
			if k.injected {
				fmt.Fprintf(m.diag(), "ahp-tap %s: %s\n", k.name, inject.Notice) // issue 25: every report says so
			}
			if len(links) > 1 {
				printable.Fprintf(m.diag(), "ahp-tap http: route %s (http://%s):\n", k.route.Hook, k.ln.Addr())
			}
			_ = k.out.Summary(k.auditor.Dropped(), k.session).WriteText(m.diag())
		}
	}
	switch {
	case serveErr != nil:
		return &exitError{code: 2, msg: fmt.Sprintf("http: %v", serveErr)}
	case closeErr != nil:
		return &exitError{code: 2, msg: fmt.Sprintf("http: %v", closeErr)}
	}
	return nil
}

// listeners listens for harnesses on each route's address and for scrapes
// on --metrics (nil without). The links it returns, even with an error,
// hold the listeners opened. Issue 8 item 10: a forward proxy or a metrics
// endpoint off loopback is open to everyone who can reach it.
func (h *httpRun) listeners(forward bool) ([]*httpLink, net.Listener, error) {
	var links []*httpLink
	for _, r := range h.routes {
		ln, err := net.Listen("tcp", r.Listen)
		if err != nil {
			return links, nil, usageError("http: %v", err)
		}
		links = append(links, &httpLink{route: r, ln: ln})
	}
	if addr := links[0].ln.Addr(); forward && !isLoopback(addr) {
		if !h.allowRemote {
			return links, nil, usageError("http: --forward on %s (not loopback) would be an open proxy for everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", addr)
		}
		fmt.Fprintf(h.m.diag(), "ahp-tap http: WARNING: --allow-remote: the forward proxy on %s is open to everyone who can reach that address\n", addr)
	}
	mln, err := listenMetrics("http", h.metricsAddr, h.allowRemote, h.m.diag())
	return links, mln, err
}

// httpMetrics is the process's one metrics registry: its series add up
// every route.
func httpMetrics(links []*httpLink) *httpproxy.Metrics {
	metrics := httpproxy.NewMetrics(func() (n uint64) {
		for _, k := range links {
			n += k.auditor.Dropped()
		}
		return n
	})
	metrics.CountCuts(func() (n uint64) {
		for _, k := range links {
			n += k.auditor.Cuts()
		}
		return n
	})
	metrics.ZeroFindings(checkIDs())
	return metrics
}

// tuneHTTPMemory sets the collector for the audit of bodies of at most
// maxAudit bytes (one body per route) within budget, unless GOGC or GOMEMLIMIT say otherwise.
func tuneHTTPMemory(budget, maxAudit int64) {
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
		// the decoded tree of the one body being checked per route (at
		// most --max-audit-body), and 80 MiB for the rest: per-connection
		// buffers, the 4 KiB prefixes of copies the budget cut, the
		// runtime. 1,000 concurrent 16 MiB uploads peak at about 200 MiB
		// of RSS with it, 260 MiB with budget+128MiB (BENCHMARKS.md,
		// Audit memory). GOMEMLIMIT in the environment wins.
		debug.SetMemoryLimit(budget + maxAudit + 80<<20)
	}
}

// openLink opens route i's way out (log, console, OTLP, metrics, capture,
// live view, live conduct client: package output), its session, audit and
// proxy. It returns the route's OTLP exporter (nil: none).
func (h *httpRun) openLink(i int, k *httpLink, l *loaded, cfg httpproxy.Config, metrics *httpproxy.Metrics, ui *liveUI) (*otlpexport.Exporter, error) {
	m := h.m
	lc := *l // each route is its own link: its own hook
	lc.cfg.HookID = k.route.Hook
	otlpx, err := h.otlpf.openHook(k.route.Capture, k.route.Hook, m.diag())
	if err != nil {
		return nil, err
	}
	k.name = "http"
	if len(h.routeFlags) > 0 {
		k.name = "http " + k.route.Hook
	}
	oc := output.Config{Name: k.name, Diag: m.diag(), Log: k.route.Log, OTLP: otlpx, OTLPClose: httpCloseTimeout,
		Sinks: []tap.Sink{metrics.Sink()}, SummaryLimit: 1, // counts only: a long-running tap must not grow
		View:    ui.view(), // one live view: every route's exchanges
		Capture: k.route.Capture, Header: capture.Header{Tool: "ahp-tap " + version, Snapshot: lc.cfg.Snapshot, Transport: tap.HTTP,
			Registration: h.ef.registration, Hook: k.route.Hook, TimeoutMs: h.ef.timeout.Milliseconds(), RegistrationDoc: lc.regDoc}}
	plan := h.inj.plan(k.route.Hook)
	if plan != nil {
		// Loud when on (issue 25): stderr now, the capture header, every report.
		oc.Header.Injected, k.injected = plan.Banner(), true
		oc.Scenarios = h.inj.scenarios()
		fmt.Fprintf(m.diag(), "ahp-tap %s: %s\n", k.name, plan.Banner())
	}
	if i == 0 {
		oc.Metrics = metrics.Gatherer() // the process's series (every route's sum), pushed once
	}
	if h.console {
		oc.Console = m.Stderr
		if len(h.routeFlags) > 0 {
			oc.ConsoleLink = cmp.Or(k.route.Hook, k.route.Listen) // the routes share stderr
		}
	}
	oc.Conduct = conductClientFor(h.conductDir, h.ef.registration, k.route.Hook, &lc, m.diag())
	if k.out, err = output.Open(oc); err != nil {
		otlpx.Close(0)
		if oc.Conduct != nil {
			oc.Conduct.Close(0)
		}
		return nil, usageError("http: %v", err)
	}
	k.session = lc.newSession(k.out.SessionConfig(tap.SessionConfig{Config: lc.cfg})) // reports the registration's findings
	// The audit yields the CPU to forwarding (BENCHMARKS.md, http, run E).
	// Deadlines are judged as they pass (issue 21 item 8): the proxy
	// hands over a request unanswered by the shortest deadline, and the
	// auditor tells the session the time the proxy vouches for.
	pc := cfg
	pc.Upstream, k.upstream = h.upstreams[i], h.upstreams[i]
	pc.Inject = plan
	pc.Probe = k.session.Config().MinDeadline()
	clock := func(now time.Time) time.Time {
		if p := k.proxyRef.Load(); p != nil {
			return p.SafeClock(now)
		}
		return now
	}
	k.auditor = k.session.Audit(tap.AuditorConfig{Queue: httpAuditQueue, Budget: h.linkBudget, Complete: h.mode == auditComplete, Begin: httpproxy.LowerAuditPriority, Clock: clock})
	pc.Auditor, pc.Metrics = k.auditor, metrics
	proxy, err := httpproxy.New(pc)
	if err != nil {
		return otlpx, usageError("http: %v", err)
	}
	k.proxyRef.Store(proxy)
	return otlpx, nil
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

// announce says where each route listens and what it forwards to.
func (h *httpRun) announce(links []*httpLink, cfg httpproxy.Config) {
	diag := h.m.diag()
	for _, k := range links {
		if !isLoopback(k.ln.Addr()) {
			// AHP-HTTP-001: plain http is for loopback only; the harness's
			// bearer token would cross the network in clear.
			fmt.Fprintf(diag, "ahp-tap http: warning: listening on %s, not loopback: harnesses reach the tap over plain http, credentials in clear\n", k.ln.Addr())
		}
		switch {
		case cfg.Forward:
			mode := "HTTPS CONNECT tunnelled unaudited"
			if cfg.MITMCA != nil {
				mode = "HTTPS intercepted with the CA in " + h.mitmCA
			}
			fmt.Fprintf(diag, "ahp-tap http: forward proxy on %s (%s); set HTTP_PROXY/HTTPS_PROXY=http://%s\n", k.ln.Addr(), mode, k.ln.Addr())
		case len(h.routeFlags) > 0:
			printable.Fprintf(diag, "ahp-tap http: listening on http://%s, forwarding to %s (hook %s)\n", k.ln.Addr(), httpaudit.URL(k.upstream.String()), k.route.Hook)
		default:
			printable.Fprintf(diag, "ahp-tap http: listening on http://%s, forwarding to %s\n", k.ln.Addr(), httpaudit.URL(k.upstream.String()))
		}
	}
}

// serve serves every route until ctx ends (a route whose listener fails
// stops the others too, as one tap would stop), then shuts down within
// --drain: requests in flight, then the routes' audit queues, logs and
// captures, side by side, share it. What is left is counted (TAP-1) and
// said.
func (h *httpRun) serve(ctx context.Context, links []*httpLink, msrv *http.Server) (serveErr, closeErr error) {
	// Issue 8 item 5: --drain bounds the whole shutdown, from the signal.
	var stopAt atomic.Int64 // unix nanoseconds of the signal
	stopTiming := context.AfterFunc(ctx, func() { stopAt.Store(time.Now().UnixNano()) })
	defer stopTiming()
	// Issue 21 item 10: a second signal cuts the requests in flight and
	// the drain short, but the audit, the log and the capture (its end
	// record) still close, within forceBound.
	var forcedAt atomic.Int64
	force := func() {
		forcedAt.Store(time.Now().UnixNano())
		for _, k := range links {
			k.proxy().Abort()
		}
	}
	h.m.force.Store(&force)
	sctx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	serveErrs := make([]error, len(links))
	var wg sync.WaitGroup
	for i, k := range links {
		wg.Go(func() {
			if serveErrs[i] = k.proxy().Serve(sctx, k.ln); serveErrs[i] != nil {
				stopAll()
			}
		})
	}
	wg.Wait()
	if msrv != nil {
		_ = msrv.Close()
	}
	for _, k := range links {
		k.proxy().Close()
	}
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
	closeErrs := make([]error, len(links))
	for i, k := range links {
		wg.Go(func() {
			if !k.auditor.CloseWithin(left()) { // drains the queue, end-of-stream rules, TAP-1 for drops
				fmt.Fprintf(h.m.diag(), "ahp-tap %s: the audit did not finish within --drain %s; %d frames were not audited (TAP-1)\n", k.name, h.drain, k.auditor.Dropped())
			}
			closeErrs[i] = k.out.Close(time.Now().Add(left())) // conduct, OTLP, log, console, capture, within --drain
		})
	}
	wg.Wait()
	return errors.Join(serveErrs...), errors.Join(closeErrs...)
}

// An httpLink is one route of `ahp-tap http`: a listener, its proxy to
// one upstream, and the link's own session, audit and way out (log,
// capture, live conduct client).
type httpLink struct {
	route    wrap.Route
	name     string   // "http", or "http HOOK" among several routes
	upstream *url.URL // nil in forward mode
	ln       net.Listener
	out      *output.Output
	session  *tap.Session
	auditor  *tap.Auditor
	proxyRef atomic.Pointer[httpproxy.Proxy]
	injected bool // --inject: this route's plan alters its traffic
}

func (k *httpLink) proxy() *httpproxy.Proxy { return k.proxyRef.Load() }

// closeHTTPLinks closes what links opened before a setup error.
func closeHTTPLinks(links []*httpLink, deadline time.Time) {
	for _, k := range links {
		if k.auditor != nil {
			k.auditor.Close()
		}
		if k.out != nil {
			k.out.Close(deadline)
		}
	}
}

// httpRoutes reads the --route flags (nil when there is none): each is
// one link, refused with the single-link flags it replaces, and each
// needs a hook of --registration (and a hook with --conduct).
func httpRoutes(fs *flag.FlagSet, ef *engineFlags, values []string, conductDir string) ([]wrap.Route, error) {
	if len(values) == 0 {
		if conductDir != "" && (ef.registration == "" || ef.hook == "") {
			return nil, usageError("http: --conduct needs --registration and --hook: the conduct timeline places each link by its hook")
		}
		return nil, nil
	}
	var clash []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "listen", "upstream", "hook", "log", "capture", "forward", "mitm-ca":
			clash = append(clash, "--"+f.Name)
		}
	})
	if len(clash) > 0 {
		return nil, usageError("http: --route replaces %s: give listen=, upstream=, hook=, log= and capture= in each route", strings.Join(clash, ", "))
	}
	var routes []wrap.Route
	hooks, files := map[string]bool{}, map[string]bool{}
	for _, v := range values {
		r, err := wrap.ParseRoute(v) // its errors never quote v: an upstream may carry credentials
		if err != nil {
			return nil, usageError("http: --route: %v", err)
		}
		switch {
		case r.Hook == "" && ef.registration != "":
			return nil, usageError("http: --route on %s: give hook=ID, the registration's hook this route is", r.Listen)
		case r.Hook == "" && conductDir != "":
			return nil, usageError("http: --conduct needs --registration and hook= in each route: the conduct timeline places each link by its hook")
		case r.Hook != "" && ef.registration == "":
			return nil, usageError("http: --route on %s: hook= needs --registration", r.Listen)
		case hooks[r.Hook] && r.Hook != "":
			return nil, usageError("http: --route: hook %q has two routes", r.Hook)
		}
		hooks[r.Hook] = true
		for _, p := range []string{r.Log, r.Capture} {
			if p != "" && p != "-" && files[p] {
				return nil, usageError("http: --route: %s is given to two routes; each route writes its own log and capture", p)
			}
			files[p] = true
		}
		routes = append(routes, r)
	}
	if ef.registration != "" {
		ef.hook = routes[0].Hook // the registration is loaded with the first; runHTTP checks the others
	}
	return routes, nil
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
