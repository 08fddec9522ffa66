package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/httpproxy"
	"github.com/ahp-tap/ahp-tap/httptap"
	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/wrap"
)

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
	var err error
	if h.upstreams, err = httptap.Upstreams(h.routes, len(h.routeFlags) > 0); err != nil {
		return usageError("%v", err)
	}
	if err := httptap.Trust(cfg, h.upstreamCA, h.mitmCA); err != nil {
		return usageError("%v", err)
	}
	return nil
}

// run runs the tap (package httptap): a reverse or forward proxy per
// route, serving until ctx ends.
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
		h.routes[0].Hook = l.Config.HookID // the registration's only hook when --hook was not given
	}
	for _, r := range h.routes[1:] {
		if tap.FindHook(l.Config.Registration, r.Hook) == nil {
			return usageError("registration %s has no hook with id %q", h.ef.registration, r.Hook)
		}
	}
	c := httptap.Config{Version: version, Diag: m.diag(), Routes: h.routes, Upstreams: h.upstreams, Named: len(h.routeFlags) > 0,
		Proxy: cfg, MITMCA: h.mitmCA, Verbose: h.verbose, Link: l, ConductDir: h.conductDir,
		MetricsAddr: h.metricsAddr, UIAddr: h.uiAddr, AllowRemote: h.allowRemote,
		Budget: h.budget, LinkBudget: h.linkBudget, MaxAudit: h.maxAudit, Complete: h.mode == auditComplete,
		Drain: h.drain, Summary: h.summary, OTLPEndpoint: h.otlpf.endpoint, Plan: h.inj.plan,
		OnForce: func(force func()) { m.force.Store(&force) }, ForceBound: forceBound}
	if h.console {
		c.Console = m.Stderr
	}
	return httptap.Run(ctx, c)
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
	routes, err := httptap.ParseRoutes(values, ef.registration, conductDir)
	if err != nil {
		return nil, usageError("%v", err)
	}
	if ef.registration != "" {
		ef.hook = routes[0].Hook // the registration is loaded with the first; runHTTP checks the others
	}
	return routes, nil
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
