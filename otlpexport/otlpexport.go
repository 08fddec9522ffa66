// Package otlpexport sends what a tap sees to an OpenTelemetry collector
// over OTLP/HTTP: findings as log records (with the official OpenTelemetry
// Go SDK), one span per exchange (spans.go) and the tap's metrics
// (metrics.go), each signal off with its OTEL_<SIGNAL>_EXPORTER=none.
//
// An Exporter is a tap.Sink and a tap.Watcher that never blocks and never
// fails the tap: Write and Judged put the finding or the span in a bounded
// queue and return; goroutines of the exporter's own turn the queues into
// requests, in batches, and export them. When a queue is full (the
// collector is slow, down or hanging) a finding or span is dropped and
// counted, as is every one of a batch the collector did not take. Close
// reports the counts as a TAP-1 finding, and Collectors exposes them as
// Prometheus metrics.
//
// Spans and metrics are written as OTLP protobuf by hand (the official
// proto types, net/http), not through the SDK: a span's ids must be known
// at its request frame, before it ends, so that the log records of the
// findings on it carry them, and its times are the frames' as the audit
// read them, not the clock's when the SDK would see them.
package otlpexport

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Defaults of Config.
const (
	DefaultQueue         = 4096
	DefaultBatch         = 512
	DefaultExportTimeout = 5 * time.Second
)

// Attribute keys of an exported finding. They are a public interface: a
// collector's pipelines and alerts select on them.
const (
	AttrCheck       = "ahp.check"
	AttrRequirement = "ahp.requirement"
	AttrRule        = "ahp.rule"
	AttrPointer     = "ahp.pointer"
	AttrDirection   = "ahp.direction"
	AttrEventType   = "ahp.event.type"
	AttrEventID     = "ahp.event.id"
	AttrRequestID   = "jsonrpc.request.id"
	AttrConn        = "ahp.conn"
	AttrCapture     = "ahp.capture.path"
	AttrFrame       = "ahp.frame.seq"
)

// Config says where findings go.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP URL. A URL without a path
	// gets the logs path, /v1/logs. Empty means: from the standard
	// OTEL_EXPORTER_OTLP_LOGS_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
	// variables (headers, compression, certificates and timeouts always
	// come from the OTEL_EXPORTER_OTLP_* variables when set).
	Endpoint string
	// Capture is the capture file the findings' frames are recorded in,
	// sent with each finding so that `ahp-tap replay` can reproduce it.
	Capture string
	// Queue bounds the findings waiting for export (0: DefaultQueue).
	Queue int
	// ExportTimeout bounds one export request (0: DefaultExportTimeout).
	ExportTimeout time.Duration
	// Version is ahp-tap's version, for the resource's service.version.
	Version string
	// Diag receives one line when exports start failing; nil discards.
	Diag io.Writer
	// Hook is the registration's hook id the link serves, the spans'
	// ahp.hook.id ("": none).
	Hook string
}

// Enabled reports whether cfg, or the environment, names a collector.
func Enabled(endpoint string) bool {
	if endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		return true
	}
	for _, sig := range []string{signalLogs, signalTraces, signalMetrics} {
		if os.Getenv("OTEL_EXPORTER_OTLP_"+sig+"_ENDPOINT") != "" {
			return true
		}
	}
	return false
}

// An Exporter is a tap.Sink that exports findings as OpenTelemetry log
// records.
type Exporter struct {
	cfg      Config
	provider *sdklog.LoggerProvider // nil: logs off (OTEL_LOGS_EXPORTER=none)
	logger   otellog.Logger
	proc     *processor
	target   string // the endpoint for people, credentials redacted
	spans    *spans // nil: traces off
	res      *resourcepb.Resource
	scope    *commonpb.InstrumentationScope

	metricsURL  string
	metricsOnce sync.Once
	metrics     atomic.Pointer[metrics] // nil until ExportMetrics
}

// New starts an exporter. It fails only on a configuration error (a bad
// URL); an unreachable collector is not an error, its findings are dropped
// and counted.
func New(cfg Config) (*Exporter, error) {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.ExportTimeout <= 0 {
		cfg.ExportTimeout = DefaultExportTimeout
	}
	if cfg.Diag == nil {
		cfg.Diag = io.Discard
	}
	if cfg.Endpoint != "" {
		if _, err := parseURL(cfg.Endpoint); err != nil {
			return nil, err
		}
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceVersion(cfg.Version)))
	if err != nil {
		res = resource.Default()
	}
	if env, err := resource.New(context.Background(), resource.WithFromEnv()); err == nil {
		if m, err := resource.Merge(res, env); err == nil {
			res = m
		}
	}
	if os.Getenv("OTEL_SERVICE_NAME") == "" && !strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		if m, err := resource.Merge(res, resource.NewSchemaless(semconv.ServiceName("ahp-tap"))); err == nil {
			res = m
		}
	}
	if !strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.instance.id=") {
		// One process's cumulative metrics must not be taken for
		// another's: every tap of a fleet has its instance.
		if m, err := resource.Merge(res, resource.NewSchemaless(semconv.ServiceInstanceID(instanceID))); err == nil {
			res = m
		}
	}
	x := &Exporter{cfg: cfg, res: protoResource(res),
		scope: &commonpb.InstrumentationScope{Name: "github.com/ahp-tap/ahp-tap", Version: cfg.Version}}
	diag := func(format string, args ...any) { printable.Fprintf(cfg.Diag, format, args...) }
	if signalOn(signalTraces) {
		u, err := signalURL(cfg.Endpoint, signalTraces)
		if err != nil {
			return nil, err
		}
		if u != "" {
			c, err := newClient(u, signalTraces)
			if err != nil {
				return nil, err
			}
			x.spans = newSpans(c, cfg.Hook, x.res, x.scope, cfg.Queue, cfg.ExportTimeout, diag)
			x.target = c.target
		}
	}
	if signalOn(signalMetrics) {
		if x.metricsURL, err = signalURL(cfg.Endpoint, signalMetrics); err != nil {
			x.spans.closeNow()
			return nil, err
		}
	}
	if signalOn(signalLogs) && (cfg.Endpoint != "" || firstEnv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") != "") {
		if err := x.openLogs(res); err != nil {
			x.spans.closeNow()
			return nil, err
		}
	}
	return x, nil
}

// openLogs starts the log record exporter.
func (x *Exporter) openLogs(res *resource.Resource) error {
	cfg := x.cfg
	opts := []otlploghttp.Option{
		otlploghttp.WithTimeout(cfg.ExportTimeout),
		// A failed batch is counted, not retried for a minute: retries
		// would only hold the queue full longer.
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}),
	}
	var target string // the endpoint for people, credentials redacted
	if cfg.Endpoint != "" {
		u, err := signalURL(cfg.Endpoint, signalLogs)
		if err != nil {
			return err
		}
		opts = append(opts, otlploghttp.WithEndpointURL(u))
		target = u
	} else {
		target = firstEnv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	// The endpoint's userinfo and credential query parameters (api_key,
	// token…) are hidden wherever it is named, and remembered, so that an
	// exporter error quoting them has them redacted too.
	var secrets httpaudit.Builder
	if u, err := url.Parse(target); err == nil {
		secrets.AddURL(u)
	}
	target = httpaudit.URL(target)
	exp, err := otlploghttp.New(context.Background(), opts...)
	if err != nil {
		return fmt.Errorf("OTLP exporter: %v", err)
	}
	p := newProcessor(exp, cfg, target)
	p.secrets = &secrets
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(p))
	x.provider, x.proc, x.target = lp, p, target
	x.logger = lp.Logger("github.com/ahp-tap/ahp-tap", otellog.WithInstrumentationVersion(cfg.Version))
	p.emit = x.emit
	p.start()
	return nil
}

// protoResource is res as OTLP protobuf.
func protoResource(res *resource.Resource) *resourcepb.Resource {
	out := &resourcepb.Resource{}
	for _, kv := range res.Attributes() {
		out.Attributes = append(out.Attributes, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}

// Watcher is the tap.Watcher that makes the exchanges' spans, or nil when
// traces are off (no collector, OTEL_TRACES_EXPORTER=none). Give it to the
// session (tap.SessionConfig.Watch) of the link whose findings this
// exporter takes.
func (x *Exporter) Watcher() tap.Watcher {
	if x == nil || x.spans == nil {
		return nil
	}
	return x.spans
}

// ExportMetrics pushes g's ahp_tap_* families to the collector every
// OTEL_METRIC_EXPORT_INTERVAL and at Close, unless metrics are off
// (OTEL_METRICS_EXPORTER=none). Only the first call counts.
func (x *Exporter) ExportMetrics(g prometheus.Gatherer) {
	if x == nil || x.metricsURL == "" || g == nil {
		return
	}
	x.metricsOnce.Do(func() {
		c, err := newClient(x.metricsURL, signalMetrics)
		if err != nil {
			printable.Fprintf(x.cfg.Diag, "ahp-tap: OTLP metrics: %v; metrics are not pushed, traffic is not affected\n", err)
			return
		}
		x.metrics.Store(newMetrics(c, g, x.res, x.scope, x.cfg.ExportTimeout, func(format string, args ...any) { printable.Fprintf(x.cfg.Diag, format, args...) }))
	})
}

// instanceID is this process's service.instance.id: random, as the
// semantic conventions suggest when nothing better names the instance.
var instanceID = func() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // a version 4 UUID
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}()

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Write exports f without blocking: it is dropped and counted when the
// queue is full. It implements tap.Sink. Nothing but a copy into the queue
// happens on the caller's goroutine.
func (x *Exporter) Write(f tap.Finding) {
	if x == nil {
		return
	}
	it := pending{f: f, capture: x.cfg.Capture}
	if x.spans != nil {
		it.ids, it.inSpan = x.spans.finding(f)
	}
	if x.proc != nil {
		x.proc.offer(it, 0)
	}
}

// WriteWait exports f as found in the named capture, waiting up to the
// export timeout for room in the queue: for offline use (replay), where
// nothing is forwarded and waiting beats dropping.
func (x *Exporter) WriteWait(f tap.Finding, capture string) {
	if x != nil && x.proc != nil {
		x.proc.offer(pending{f: f, capture: capture}, x.cfg.ExportTimeout)
	}
}

// A pending finding waits in the queue for the export goroutine.
type pending struct {
	f       tap.Finding
	capture string
	ids     spanIDs // the span of its exchange, when inSpan
	inSpan  bool
}

// emit turns a finding into a log record through the SDK's logger, which
// hands it to the processor. It runs on the export goroutine only.
func (x *Exporter) emit(it pending) {
	f, capture := it.f, it.capture
	var r otellog.Record
	now := time.Now()
	ts := f.Time
	if ts.IsZero() {
		ts = now
	}
	r.SetTimestamp(ts)
	r.SetObservedTimestamp(now)
	r.SetSeverity(severity(f.Level))
	r.SetSeverityText(f.Level.String())
	r.SetBody(attribute.StringValue(f.Message))
	attrs := make([]attribute.KeyValue, 0, 11)
	attrs = append(attrs, attribute.String(AttrCheck, f.Check))
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	add(AttrRequirement, f.Requirement)
	add(AttrRule, f.Rule)
	attrs = append(attrs, attribute.String(AttrPointer, f.Pointer))
	if f.Dir != 0 {
		add(AttrDirection, f.Dir.String())
	}
	add(AttrEventType, f.EventType)
	add(AttrEventID, f.EventID)
	add(AttrRequestID, requestID(f.RPCID))
	add(AttrConn, f.Conn)
	add(AttrCapture, capture)
	if f.Seq > 0 {
		attrs = append(attrs, attribute.Int64(AttrFrame, int64(f.Seq)))
	}
	r.AddAttributes(attrs...)
	ctx := context.Background()
	// The SDK takes the record's trace and span from the context: the
	// exchange's span, else the harness's trace context of the event.
	if it.inSpan {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: it.ids.trace, SpanID: it.ids.span, TraceFlags: trace.FlagsSampled})
		ctx = trace.ContextWithSpanContext(ctx, sc)
	} else if sc, ok := spanContext(f.TraceParent); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	x.logger.Emit(ctx, r)
}

// requestID is the JSON-RPC id as the semantic conventions want it: a
// string id without its quotes, a number as written, and nothing for a
// null id ("SHOULD NOT capture this attribute when the id is null").
func requestID(wire string) string {
	if wire == "null" {
		return ""
	}
	var s string
	if strings.HasPrefix(wire, `"`) && json.Unmarshal([]byte(wire), &s) == nil {
		return s
	}
	return wire
}

func severity(l tap.Level) otellog.Severity {
	switch l {
	case tap.Error:
		return otellog.SeverityError
	case tap.Warn:
		return otellog.SeverityWarn
	}
	return otellog.SeverityInfo
}

// spanContext parses a W3C traceparent ("00-<trace id>-<span id>-<flags>").
func spanContext(tp string) (trace.SpanContext, bool) {
	parts := strings.Split(strings.TrimSpace(tp), "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || len(parts[3]) != 2 {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags trace.TraceFlags
	if b, err := hexByte(parts[3]); err == nil {
		flags = trace.TraceFlags(b)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return sc, sc.IsValid()
}

func hexByte(s string) (byte, error) {
	var b byte
	_, err := fmt.Sscanf(s, "%02x", &b)
	return b, err
}

// Dropped returns how many findings were not exported so far.
func (x *Exporter) Dropped() uint64 {
	if x == nil || x.proc == nil {
		return 0
	}
	return x.proc.dropped.Load()
}

// Exported returns how many findings the collector accepted so far.
func (x *Exporter) Exported() uint64 {
	if x == nil || x.proc == nil {
		return 0
	}
	return x.proc.exported.Load()
}

// SpansDropped returns how many exchange spans were not exported so far.
func (x *Exporter) SpansDropped() uint64 {
	if x == nil || x.spans == nil {
		return 0
	}
	return x.spans.dropped.Load()
}

// SpansExported returns how many exchange spans the collector accepted.
func (x *Exporter) SpansExported() uint64 {
	if x == nil || x.spans == nil {
		return 0
	}
	return x.spans.exported.Load()
}

// MetricPushesFailed returns how many metric pushes did not reach the
// collector so far.
func (x *Exporter) MetricPushesFailed() uint64 {
	if x == nil {
		return 0
	}
	if m := x.metrics.Load(); m != nil {
		return m.failed.Load()
	}
	return 0
}

// Close ends the spans still open, pushes the metrics a last time and
// exports what is queued, each signal for at most timeout, in parallel,
// then stops. It returns the TAP-1 finding for what was not exported, if
// anything, for the caller's other sinks. It is idempotent; later calls
// return nothing.
func (x *Exporter) Close(timeout time.Duration) *tap.Finding {
	if x == nil {
		return nil
	}
	var wg sync.WaitGroup
	first := false
	wg.Go(func() {
		if x.spans != nil && x.spans.close(timeout) {
			first = true
		}
	})
	var metricsFirst bool
	wg.Go(func() {
		// ExportMetrics after this point starts nothing.
		x.metricsOnce.Do(func() {})
		if m := x.metrics.Load(); m != nil {
			metricsFirst = m.close(timeout)
		}
	})
	logsFirst := false
	if x.proc != nil && x.proc.stop(timeout) {
		logsFirst = true
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_ = x.provider.Shutdown(ctx) // the processor is stopped already: this only releases the exporter
		cancel()
	}
	wg.Wait()
	if !first && !logsFirst && !metricsFirst {
		return nil
	}
	var lost []string
	if n := x.Dropped(); n > 0 {
		lost = append(lost, fmt.Sprintf("%d findings", n))
	}
	if n := x.SpansDropped(); n > 0 {
		lost = append(lost, fmt.Sprintf("%d exchange spans", n))
	}
	if n := x.MetricPushesFailed(); n > 0 {
		lost = append(lost, fmt.Sprintf("%d metric pushes", n))
	}
	if len(lost) == 0 {
		return nil
	}
	f := tap.TapIncomplete.At(nil, tap.Warn, "", "%s were not exported to the OTLP collector at %s (queue full, collector slow, down or refusing); forwarding and the other sinks were not affected", strings.Join(lost, ", "), x.target)
	return &f
}

// Collectors are the exporter's Prometheus metrics.
func (x *Exporter) Collectors() []prometheus.Collector { return Collectors(x) }

// Collectors are the Prometheus metrics of several exporters of one
// process (the routes of one `ahp-tap http`), each series their sum.
func Collectors(xs ...*Exporter) []prometheus.Collector {
	sum := func(count func(*Exporter) uint64) func() float64 {
		return func() float64 {
			var n uint64
			for _, x := range xs {
				n += count(x)
			}
			return float64(n)
		}
	}
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ahp_tap_otlp_exported_total",
			Help: "Findings the OTLP collector accepted.",
		}, sum((*Exporter).Exported)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ahp_tap_otlp_dropped_total",
			Help: "Findings not exported to the OTLP collector (queue full, export failed or timed out); reported as TAP-1.",
		}, sum((*Exporter).Dropped)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ahp_tap_otlp_spans_exported_total",
			Help: "Exchange spans the OTLP collector accepted.",
		}, sum((*Exporter).SpansExported)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ahp_tap_otlp_spans_dropped_total",
			Help: "Exchange spans not exported to the OTLP collector (queue full, export failed or timed out); reported as TAP-1.",
		}, sum((*Exporter).SpansDropped)),
	}
}

// processor is the SDK log processor between the logger and the OTLP
// exporter, and the bounded queue in front of both: findings wait in the
// queue (dropped and counted when it is full), and one goroutine turns
// them into records through the logger, which hands each back to OnEmit,
// and exports them in batches. (The SDK's BatchProcessor also drops when
// full, but only logs how many; ahp-tap must report every loss as TAP-1,
// and keep the SDK's work off the auditing goroutine.)
type processor struct {
	exp     sdklog.Exporter
	emit    func(it pending) // the exporter's, set before the goroutine starts
	timeout time.Duration
	diag    io.Writer
	target  string
	secrets *httpaudit.Builder // the endpoint's credentials, redacted from diagnostics

	ctx      context.Context // cancelled when the drain at stop runs out of time
	cancel   context.CancelFunc
	q        chan pending    // bounded queue; never closed (Write may race with stop)
	batch    []sdklog.Record // records emitted for the export in progress; export goroutine only
	stopping chan struct{}   // closed by stop: drain what is queued, then end
	deadline atomic.Int64    // unix nanoseconds by which the drain ends
	done     chan struct{}   // closed when the export goroutine has ended
	once     sync.Once
	dropped  atomic.Uint64
	exported atomic.Uint64
	inflight atomic.Int64 // findings of the export in progress, not yet counted
	warned   atomic.Bool  // the one diagnostic line has been written
}

func newProcessor(exp sdklog.Exporter, cfg Config, target string) *processor {
	p := &processor{exp: exp, timeout: cfg.ExportTimeout, diag: cfg.Diag, target: target,
		q: make(chan pending, cfg.Queue), stopping: make(chan struct{}), done: make(chan struct{}),
		batch: make([]sdklog.Record, 0, DefaultBatch)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// start runs the export goroutine.
func (p *processor) start() { go p.run() }

// offer queues a finding, waiting up to wait for room; it is dropped and
// counted otherwise, and after stop.
func (p *processor) offer(it pending, wait time.Duration) {
	select {
	case <-p.stopping:
		p.dropped.Add(1)
		return
	default:
	}
	select {
	case p.q <- it:
		return
	default:
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case p.q <- it:
			return
		case <-t.C:
		case <-p.stopping:
		}
	}
	p.dropped.Add(1)
}

// Enabled implements sdklog.Processor.
func (p *processor) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

// OnEmit implements sdklog.Processor: it adds r to the batch being built.
// Only the export goroutine emits.
func (p *processor) OnEmit(_ context.Context, r *sdklog.Record) error {
	p.batch = append(p.batch, r.Clone())
	return nil
}

// Shutdown implements sdklog.Processor; stop has done the work.
func (p *processor) Shutdown(ctx context.Context) error { return p.exp.Shutdown(ctx) }

// ForceFlush implements sdklog.Processor.
func (p *processor) ForceFlush(context.Context) error { return nil }

func (p *processor) run() {
	defer close(p.done)
	for {
		select {
		case it := <-p.q:
			p.emit(it)
		case <-p.stopping:
			p.drain()
			return
		}
		p.fill()
		p.export(time.Now().Add(p.timeout))
	}
}

// fill emits what is queued, up to a batch.
func (p *processor) fill() {
	for len(p.batch) < DefaultBatch {
		select {
		case it := <-p.q:
			p.emit(it)
			continue
		default:
		}
		return
	}
}

// drain exports what is queued until the queue is empty or the deadline
// set by stop passes; what is left is counted as dropped.
func (p *processor) drain() {
	deadline := time.Unix(0, p.deadline.Load())
	for time.Now().Before(deadline) {
		p.fill()
		if len(p.batch) == 0 {
			return
		}
		p.export(deadline)
	}
	p.discard()
}

// discard counts what is queued as dropped, taking it from the queue so
// that no finding is counted twice (stop may give up on the drain while
// it runs).
func (p *processor) discard() {
	for {
		select {
		case <-p.q:
			p.dropped.Add(1)
		default:
			return
		}
	}
}

// export sends the batch and empties it.
func (p *processor) export(deadline time.Time) {
	batch := p.batch
	p.batch = p.batch[:0]
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(p.ctx, deadline)
	defer cancel()
	p.inflight.Store(int64(len(batch)))
	err := p.exp.Export(ctx, batch)
	if p.inflight.Swap(0) == 0 {
		return // stop gave up on this export and counted it
	}
	if err != nil {
		p.dropped.Add(uint64(len(batch)))
		if p.warned.CompareAndSwap(false, true) {
			msg := err.Error()
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				msg = "no answer in time"
			}
			if p.secrets != nil {
				msg = p.secrets.Text(msg)
			}
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
			printable.Fprintf(p.diag, "ahp-tap: exporting findings to the OTLP collector at %s failed (%s); findings are dropped and counted (TAP-1), traffic is not affected\n", p.target, msg)
		}
		return
	}
	p.exported.Add(uint64(len(batch)))
}

// stop makes the export goroutine drain the queue for at most timeout and
// waits for it, no longer than that (plus a little for an export to see its
// deadline). It reports false when already stopped.
func (p *processor) stop(timeout time.Duration) bool {
	first := false
	p.once.Do(func() {
		first = true
		p.deadline.Store(time.Now().Add(timeout).UnixNano())
		time.AfterFunc(timeout, p.cancel) // an export in flight ends by the deadline too
		close(p.stopping)
	})
	if !first {
		return false
	}
	select {
	case <-p.done:
	case <-time.After(timeout + 100*time.Millisecond):
		// An export is stuck past its deadline: give up on it; the
		// queue's findings are lost.
		p.dropped.Add(uint64(p.inflight.Swap(0)))
		p.discard()
	}
	return true
}
