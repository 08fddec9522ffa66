package otlpexport

import (
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// DefaultMetricInterval is how often metrics are pushed when
// OTEL_METRIC_EXPORT_INTERVAL does not say (the SDKs' default).
const DefaultMetricInterval = 60 * time.Second

// MetricPrefix selects the families pushed: ahp-tap's own, the families
// its Prometheus endpoint serves under the same names (not the Go runtime
// and process collectors, which a collector's host metrics cover).
const MetricPrefix = "ahp_tap_"

// metrics pushes the families of a Prometheus registry as OTLP metrics,
// every interval and once more at close: the same counts, under the same
// names, as the Prometheus endpoint serves, with cumulative temporality
// (a push that fails loses nothing but freshness; it is counted).
type metrics struct {
	c        *client
	g        prometheus.Gatherer
	resource *resourcepb.Resource
	scope    *commonpb.InstrumentationScope
	timeout  time.Duration
	interval time.Duration
	start    uint64
	diag     func(string, ...any)

	ctx      context.Context
	cancel   context.CancelFunc
	stopping chan struct{}
	done     chan struct{}
	once     sync.Once
	failed   atomic.Uint64 // pushes that did not reach the collector
	pushed   atomic.Uint64
	warned   atomic.Bool
}

// processStart is the start of every cumulative series this process
// pushes: the registry's counts run from there, whichever link's exporter
// pushes them (a shared audit process serves many).
var processStart = time.Now()

func newMetrics(c *client, g prometheus.Gatherer, res *resourcepb.Resource, scope *commonpb.InstrumentationScope, timeout time.Duration, diag func(string, ...any)) *metrics {
	m := &metrics{c: c, g: g, resource: res, scope: scope, timeout: timeout, interval: metricInterval(),
		start: unixNano(processStart), diag: diag, stopping: make(chan struct{}), done: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	go m.run()
	return m
}

// metricInterval is OTEL_METRIC_EXPORT_INTERVAL (milliseconds), else
// DefaultMetricInterval.
func metricInterval() time.Duration {
	if ms, err := strconv.Atoi(strings.TrimSpace(os.Getenv("OTEL_METRIC_EXPORT_INTERVAL"))); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return DefaultMetricInterval
}

func (m *metrics) run() {
	defer close(m.done)
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			m.push(time.Now().Add(m.timeout))
		case <-m.stopping:
			return
		}
	}
}

// push gathers and sends one snapshot.
func (m *metrics) push(deadline time.Time) {
	fams, err := m.g.Gather()
	if err != nil && len(fams) == 0 {
		m.failed.Add(1)
		return
	}
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource:     m.resource,
		ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: m.scope, Metrics: convert(fams, m.start, unixNano(time.Now()))}},
	}}}
	ctx, cancel := context.WithDeadline(m.ctx, deadline)
	defer cancel()
	if err := m.c.post(ctx, req, nil); err != nil {
		m.failed.Add(1)
		if m.warned.CompareAndSwap(false, true) {
			m.diag("ahp-tap: pushing metrics to the OTLP collector at %s failed (%s); the next push carries the counts again, traffic is not affected\n", m.c.target, cut(err.Error()))
		}
		return
	}
	m.pushed.Add(1)
}

// close stops the pushes and makes a last one within timeout, so that a
// short-lived tap's counts arrive. It reports false when already closed.
func (m *metrics) close(timeout time.Duration) bool {
	first := false
	m.once.Do(func() {
		first = true
		close(m.stopping)
	})
	if !first {
		return false
	}
	<-m.done // the ticker goroutine holds no push past its own deadline
	deadline := time.Now().Add(timeout)
	stop := time.AfterFunc(timeout, m.cancel)
	defer stop.Stop()
	m.push(deadline)
	return true
}

// convert turns Prometheus families into OTLP metrics: a counter into a
// monotonic cumulative sum, a gauge (or untyped) into a gauge, a
// histogram into a cumulative explicit-bucket histogram.
func convert(fams []*dto.MetricFamily, start, now uint64) []*metricspb.Metric {
	var out []*metricspb.Metric
	for _, fam := range fams {
		name := fam.GetName()
		if !strings.HasPrefix(name, MetricPrefix) {
			continue
		}
		m := &metricspb.Metric{Name: name, Description: fam.GetHelp()}
		switch {
		case strings.HasSuffix(name, "_seconds"):
			m.Unit = "s"
		case strings.HasSuffix(name, "_bytes_total"), strings.HasSuffix(name, "_bytes"):
			m.Unit = "By"
		}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			var pts []*metricspb.NumberDataPoint
			for _, pm := range fam.Metric {
				pts = append(pts, &metricspb.NumberDataPoint{Attributes: labels(pm), StartTimeUnixNano: start, TimeUnixNano: now,
					Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: pm.GetCounter().GetValue()}})
			}
			m.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: pts, IsMonotonic: true,
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE}}
		case dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
			var pts []*metricspb.NumberDataPoint
			for _, pm := range fam.Metric {
				v := pm.GetGauge().GetValue()
				if fam.GetType() == dto.MetricType_UNTYPED {
					v = pm.GetUntyped().GetValue()
				}
				pts = append(pts, &metricspb.NumberDataPoint{Attributes: labels(pm), TimeUnixNano: now,
					Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}})
			}
			m.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: pts}}
		case dto.MetricType_HISTOGRAM:
			var pts []*metricspb.HistogramDataPoint
			for _, pm := range fam.Metric {
				h := pm.GetHistogram()
				sum := h.GetSampleSum()
				p := &metricspb.HistogramDataPoint{Attributes: labels(pm), StartTimeUnixNano: start, TimeUnixNano: now,
					Count: h.GetSampleCount(), Sum: &sum}
				var prev uint64
				for _, b := range h.Bucket {
					if math.IsInf(b.GetUpperBound(), +1) {
						continue
					}
					p.ExplicitBounds = append(p.ExplicitBounds, b.GetUpperBound())
					p.BucketCounts = append(p.BucketCounts, b.GetCumulativeCount()-prev)
					prev = b.GetCumulativeCount()
				}
				p.BucketCounts = append(p.BucketCounts, h.GetSampleCount()-prev) // (last bound, +Inf)
				pts = append(pts, p)
			}
			m.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: pts,
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE}}
		default:
			continue // summaries: ahp-tap has none
		}
		out = append(out, m)
	}
	return out
}

func labels(pm *dto.Metric) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(pm.Label))
	for _, l := range pm.Label {
		out = append(out, strKV(l.GetName(), l.GetValue()))
	}
	return out
}
