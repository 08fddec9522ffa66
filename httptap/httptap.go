// Package httptap runs `ahp-tap http` once its flags are read: a reverse
// or forward proxy per route (httpproxy), each route a link of its own
// with its session, audit and way out (package output), the process's
// metrics and live view, and a shutdown bounded by --drain. The command
// parses and checks the flags and builds a Config; Run does the rest.
package httptap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/conduct/live"
	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/httpproxy"
	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/internal/gctune"
	"github.com/ahp-tap/ahp-tap/internal/linkconf"
	tapmetrics "github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/viewserve"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/wrap"
)

// auditQueue is the HTTP tap's audit queue, in frames and notes: room
// for bursts of a few thousand exchanges (about 2 KiB each at 1 KiB bodies)
// before audit copies are dropped.
const auditQueue = 16384

// closeTimeout is how long the tap waits, at exit, for the OTLP collector
// to take the findings still queued.
const closeTimeout = time.Second

// minSinkClose is what closing a route's audit, log and capture gets when
// the shutdown bound has already passed.
const minSinkClose = 100 * time.Millisecond

// Config is `ahp-tap http` once its flags are read and checked.
type Config struct {
	// Version is ahp-tap's version, for capture headers and OTLP.
	Version string
	// Diag receives ahp-tap's own messages; it must never block.
	Diag io.Writer
	// Console, when set (--console), gets each finding as a readable line.
	Console io.Writer
	// Routes are the links, one each; Upstreams their upstreams (nil
	// entries with Proxy.Forward).
	Routes    []wrap.Route
	Upstreams []*url.URL
	// Named is true when the routes come from --route: each link is then
	// named by its hook.
	Named bool
	// Proxy is every route's proxy settings; Run sets each route's
	// upstream, audit, metrics, fault plan and diagnostic log.
	Proxy httpproxy.Config
	// MITMCA is the --mitm-ca directory, as the announcement names it.
	MITMCA string
	// Verbose is -v: debug diagnostics.
	Verbose bool
	// Link is what every route checks against; each route's own hook
	// replaces its HookID.
	Link *linkconf.Loaded
	// ConductDir is --conduct ("": none).
	ConductDir string
	// MetricsAddr and UIAddr are --metrics and --ui ("": none), allowed
	// off loopback with AllowRemote.
	MetricsAddr, UIAddr string
	AllowRemote         bool
	// Budget is --audit-budget, shared by the routes; LinkBudget each
	// route's share. MaxAudit is the audit copy's cap of one body.
	Budget, LinkBudget int64
	MaxAudit           int
	// Complete is --audit complete: requests wait for the audit.
	Complete bool
	// Drain bounds the shutdown from the first signal.
	Drain time.Duration
	// Summary prints each route's summary on Diag at exit.
	Summary bool
	// OTLPEndpoint is --otlp-endpoint.
	OTLPEndpoint string
	// Plan is the fault plan of a route's hook (--inject; nil: none).
	Plan func(hook string) *inject.Plan
	// OnForce, when set, is given the function a second termination
	// signal calls: it cuts the requests in flight and the drain short;
	// the audits, logs and captures still close within ForceBound.
	OnForce    func(force func())
	ForceBound time.Duration
}

// Run runs the tap: a reverse or forward proxy per route, serving until
// ctx ends, then shutting down within Drain and printing the summaries.
// Its errors are one line each, an exit status 2 for the command.
func Run(ctx context.Context, c Config) error {
	r := &run{Config: c}
	cfg := c.Proxy
	level := zerolog.WarnLevel
	if c.Verbose {
		level = zerolog.DebugLevel
	}
	// Diag never blocks (issue 8 item 8): with stderr not read and the
	// upstream failing, a diagnostic per request must not hold requests.
	cfg.Log = zerolog.New(PrintableConsole(c.Diag)).
		Level(level).With().Timestamp().Str("tap", "http").Logger()
	links, mln, err := r.listeners(cfg.Forward)
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
	ui, err := viewserve.OpenLive("http", c.UIAddr, c.AllowRemote, c.Version, c.Link.Config.Snapshot, c.Diag)
	if err != nil {
		return err
	}
	defer ui.Close()
	tuneMemory(c.Budget, int64(len(links))*int64(c.MaxAudit))
	c.Link.Config.Transport = tap.HTTP
	metrics := newMetrics(links)
	var exporters []*otlpexport.Exporter
	for i, k := range links {
		x, err := r.openLink(i, k, cfg, metrics, ui)
		if err != nil {
			closeLinks(links, time.Now())
			return err
		}
		if x != nil {
			exporters = append(exporters, x)
		}
	}
	if len(exporters) > 0 {
		metrics.Register(otlpexport.Collectors(exporters...)...) // one series each, summed over the routes
	}
	ui.Serve()
	msrv := r.serveMetrics(mln, metrics)
	r.announce(links, cfg)
	serveErr, closeErr := r.serve(ctx, links, msrv)
	if c.Summary {
		for _, k := range links {
			if k.injected {
				fmt.Fprintf(c.Diag, "ahp-tap %s: %s\n", k.name, inject.Notice) // issue 25: every report says so
			}
			if len(links) > 1 {
				printable.Fprintf(c.Diag, "ahp-tap http: route %s (http://%s):\n", k.route.Hook, k.ln.Addr())
			}
			_ = k.out.Summary(k.auditor.Dropped(), k.session).WriteText(c.Diag)
		}
	}
	switch {
	case serveErr != nil:
		return fmt.Errorf("http: %v", serveErr)
	case closeErr != nil:
		return fmt.Errorf("http: %v", closeErr)
	}
	return nil
}

// run is one Run.
type run struct {
	Config
}

// listeners listens for harnesses on each route's address and for scrapes
// on --metrics (nil without). The links it returns, even with an error,
// hold the listeners opened. Issue 8 item 10: a forward proxy or a metrics
// endpoint off loopback is open to everyone who can reach it.
func (r *run) listeners(forward bool) ([]*link, net.Listener, error) {
	var links []*link
	for _, rt := range r.Routes {
		ln, err := net.Listen("tcp", rt.Listen)
		if err != nil {
			return links, nil, fmt.Errorf("http: %v", err)
		}
		links = append(links, &link{route: rt, ln: ln})
	}
	if addr := links[0].ln.Addr(); forward && !viewserve.IsLoopback(addr) {
		if !r.AllowRemote {
			return links, nil, fmt.Errorf("http: --forward on %s (not loopback) would be an open proxy for everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", addr)
		}
		fmt.Fprintf(r.Diag, "ahp-tap http: WARNING: --allow-remote: the forward proxy on %s is open to everyone who can reach that address\n", addr)
	}
	mln, err := tapmetrics.Listen("http", r.MetricsAddr, r.AllowRemote, r.Diag)
	return links, mln, err
}

// newMetrics is the process's one metrics registry: its series add up
// every route.
func newMetrics(links []*link) *httpproxy.Metrics {
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
	metrics.ZeroFindings(tapmetrics.CheckIDs())
	return metrics
}

// tuneMemory sets the collector for the audit of bodies of at most
// maxAudit bytes (one body per route) within budget, unless GOGC or
// GOMEMLIMIT say otherwise. The soft limit keeps collections rare while
// the heap is small and bounds it (GOGC 400 alone let the heap grow to five
// times the live data, 1.5 GiB in the 10-minute soak, RELIABILITY.md): the
// audit budget (copies in flight, queued and being checked), the decoded
// tree of the one body being checked per route (at most --max-audit-body),
// and 80 MiB for the rest: per-connection buffers, the 4 KiB prefixes of
// copies the budget cut, the runtime. 1,000 concurrent 16 MiB uploads peak
// at about 200 MiB of RSS with it, 260 MiB with budget+128MiB
// (BENCHMARKS.md, Audit memory).
func tuneMemory(budget, maxAudit int64) {
	gctune.Audit(budget + maxAudit + 80<<20)
}

// openLink opens route i's way out (log, console, OTLP, metrics, capture,
// live view, live conduct client: package output), its session, audit and
// proxy. It returns the route's OTLP exporter (nil: none).
func (r *run) openLink(i int, k *link, cfg httpproxy.Config, metrics *httpproxy.Metrics, ui *viewserve.Live) (*otlpexport.Exporter, error) {
	lc := *r.Link // each route is its own link: its own hook
	lc.Config.HookID = k.route.Hook
	otlpx, err := r.openOTLP(k.route.Capture, k.route.Hook)
	if err != nil {
		return nil, err
	}
	k.name = "http"
	if r.Named {
		k.name = "http " + k.route.Hook
	}
	oc := output.Config{Name: k.name, Diag: r.Diag, Log: k.route.Log, OTLP: otlpx, OTLPClose: closeTimeout,
		Sinks: []tap.Sink{metrics.Sink()}, SummaryLimit: 1, // counts only: a long-running tap must not grow
		View:    ui.View(), // one live view: every route's exchanges
		Capture: k.route.Capture, Header: capture.Header{Tool: "ahp-tap " + r.Version, Snapshot: lc.Config.Snapshot, Transport: tap.HTTP,
			Registration: r.Link.Registration, Hook: k.route.Hook, TimeoutMs: r.Link.Config.Timeout.Milliseconds(), RegistrationDoc: lc.RegDoc}}
	var plan *inject.Plan
	if r.Plan != nil {
		plan = r.Plan(k.route.Hook)
	}
	if plan != nil {
		// Loud when on (issue 25): stderr now, the capture header, every report.
		oc.Header.Injected, k.injected = plan.Banner(), true
		oc.Scenarios = plan.Scenarios()
		fmt.Fprintf(r.Diag, "ahp-tap %s: %s\n", k.name, plan.Banner())
	}
	if i == 0 {
		oc.Metrics = metrics.Gatherer() // the process's series (every route's sum), pushed once
	}
	if r.Console != nil {
		oc.Console = r.Console
		if r.Named {
			oc.ConsoleLink = cmp.Or(k.route.Hook, k.route.Listen) // the routes share stderr
		}
	}
	oc.Conduct = live.ClientFor(r.ConductDir, r.Link.Registration, k.route.Hook, lc.Config.Registration, true, r.Diag)
	if k.out, err = output.Open(oc); err != nil {
		otlpx.Close(0)
		if oc.Conduct != nil {
			oc.Conduct.Close(0)
		}
		return nil, fmt.Errorf("http: %v", err)
	}
	k.session = lc.NewSession(k.out.SessionConfig(tap.SessionConfig{Config: lc.Config})) // reports the registration's findings
	// The audit yields the CPU to forwarding (BENCHMARKS.md, http, run E).
	// Deadlines are judged as they pass (issue 21 item 8): the proxy
	// hands over a request unanswered by the shortest deadline, and the
	// auditor tells the session the time the proxy vouches for.
	pc := cfg
	pc.Upstream, k.upstream = r.Upstreams[i], r.Upstreams[i]
	pc.Inject = plan
	pc.Probe = k.session.Config().MinDeadline()
	clock := func(now time.Time) time.Time {
		if p := k.proxyRef.Load(); p != nil {
			return p.SafeClock(now)
		}
		return now
	}
	k.auditor = k.session.Audit(tap.AuditorConfig{Queue: auditQueue, Budget: r.LinkBudget, Complete: r.Complete, Begin: httpproxy.LowerAuditPriority, Clock: clock})
	pc.Auditor, pc.Metrics = k.auditor, metrics
	proxy, err := httpproxy.New(pc)
	if err != nil {
		return otlpx, fmt.Errorf("http: %v", err)
	}
	k.proxyRef.Store(proxy)
	return otlpx, nil
}

// openOTLP starts the route's exporter, or returns nil when no collector
// is named (--otlp-endpoint, or the OTEL_* environment).
func (r *run) openOTLP(capture, hook string) (*otlpexport.Exporter, error) {
	if !otlpexport.Enabled(r.OTLPEndpoint) {
		return nil, nil
	}
	x, err := otlpexport.New(otlpexport.Config{Endpoint: r.OTLPEndpoint, Capture: capture, Version: r.Version, Diag: r.Diag, Hook: hook})
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint: %v", err)
	}
	return x, nil
}

// serveMetrics serves the metrics on mln (nil: none).
func (r *run) serveMetrics(mln net.Listener, metrics *httpproxy.Metrics) *http.Server {
	if mln == nil {
		return nil
	}
	msrv := &http.Server{Handler: metrics.Mux(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = msrv.Serve(mln) }()
	fmt.Fprintf(r.Diag, "ahp-tap http: metrics on http://%s/metrics\n", mln.Addr())
	return msrv
}

// announce says where each route listens and what it forwards to.
func (r *run) announce(links []*link, cfg httpproxy.Config) {
	diag := r.Diag
	for _, k := range links {
		if !viewserve.IsLoopback(k.ln.Addr()) {
			// AHP-HTTP-001: plain http is for loopback only; the harness's
			// bearer token would cross the network in clear.
			fmt.Fprintf(diag, "ahp-tap http: warning: listening on %s, not loopback: harnesses reach the tap over plain http, credentials in clear\n", k.ln.Addr())
		}
		switch {
		case cfg.Forward:
			mode := "HTTPS CONNECT tunnelled unaudited"
			if cfg.MITMCA != nil {
				mode = "HTTPS intercepted with the CA in " + r.MITMCA
			}
			fmt.Fprintf(diag, "ahp-tap http: forward proxy on %s (%s); set HTTP_PROXY/HTTPS_PROXY=http://%s\n", k.ln.Addr(), mode, k.ln.Addr())
		case r.Named:
			printable.Fprintf(diag, "ahp-tap http: listening on http://%s, forwarding to %s (hook %s)\n", k.ln.Addr(), httpaudit.URL(k.upstream.String()), k.route.Hook)
		default:
			printable.Fprintf(diag, "ahp-tap http: listening on http://%s, forwarding to %s\n", k.ln.Addr(), httpaudit.URL(k.upstream.String()))
		}
	}
}

// serve serves every route until ctx ends (a route whose listener fails
// stops the others too, as one tap would stop), then shuts down within
// Drain: requests in flight, then the routes' audit queues, logs and
// captures, side by side, share it. What is left is counted (TAP-1) and
// said.
func (r *run) serve(ctx context.Context, links []*link, msrv *http.Server) (serveErr, closeErr error) {
	// Issue 8 item 5: --drain bounds the whole shutdown, from the signal.
	var stopAt atomic.Int64 // unix nanoseconds of the signal
	stopTiming := context.AfterFunc(ctx, func() { stopAt.Store(time.Now().UnixNano()) })
	defer stopTiming()
	// Issue 21 item 10: a second signal cuts the requests in flight and
	// the drain short, but the audit, the log and the capture (its end
	// record) still close, within ForceBound.
	var forcedAt atomic.Int64
	if r.OnForce != nil {
		r.OnForce(func() {
			forcedAt.Store(time.Now().UnixNano())
			for _, k := range links {
				k.proxy().Abort()
			}
		})
	}
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
	deadline := time.Now().Add(r.Drain)
	if ns := stopAt.Load(); ns != 0 {
		deadline = time.Unix(0, ns).Add(r.Drain)
	}
	left := func() time.Duration {
		d := deadline
		if ns := forcedAt.Load(); ns != 0 {
			d = time.Unix(0, ns).Add(r.ForceBound)
		}
		return max(time.Until(d), minSinkClose)
	}
	// Every route's audit drains before any route's way out closes: a
	// route's live conduct link that closed while another route was still
	// draining let the conduct server end for want of links, and the
	// slower route's facts started a second server that judged them
	// without the first route's: a false COND-3 on a starved machine.
	for _, k := range links {
		wg.Go(func() {
			if !k.auditor.CloseWithin(left()) { // drains the queue, end-of-stream rules, TAP-1 for drops
				fmt.Fprintf(r.Diag, "ahp-tap %s: the audit did not finish within --drain %s; %d frames were not audited (TAP-1)\n", k.name, r.Drain, k.auditor.Dropped())
			}
		})
	}
	wg.Wait()
	closeErrs := make([]error, len(links))
	for i, k := range links {
		wg.Go(func() {
			closeErrs[i] = k.out.Close(time.Now().Add(left())) // conduct, OTLP, log, console, capture, within --drain
		})
	}
	wg.Wait()
	return errors.Join(serveErrs...), errors.Join(closeErrs...)
}

// A link is one route of `ahp-tap http`: a listener, its proxy to
// one upstream, and the link's own session, audit and way out (log,
// capture, live conduct client).
type link struct {
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

func (k *link) proxy() *httpproxy.Proxy { return k.proxyRef.Load() }

// closeLinks closes what links opened before a setup error.
func closeLinks(links []*link, deadline time.Time) {
	for _, k := range links {
		if k.auditor != nil {
			k.auditor.Close()
		}
		if k.out != nil {
			k.out.Close(deadline)
		}
	}
}

// PrintableConsole is the diagnostic log's console writer with every part
// made printable (internal/printable): a message or a field can quote a
// URL, a header or an error from the wire, and zerolog quotes only some
// field values (not the message, not C1 or bidi characters in objects).
func PrintableConsole(out io.Writer) zerolog.ConsoleWriter {
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
