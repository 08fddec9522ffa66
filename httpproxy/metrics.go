package httpproxy

import (
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Metrics are the Prometheus metrics of one tap: those every tap serves
// (metrics.Base: findings, build, process and Go runtime, the handlers)
// and the HTTP tap's own. No label ever holds a credential, a URL or a
// body. A nil *Metrics counts nothing.
type Metrics struct {
	*metrics.Base
	requests *prometheus.CounterVec // by HTTP method and status answered to the harness
	// series holds the requests counters looked up so far, read without
	// a lock: WithLabelValues (a status string, a hash of the labels, a
	// lock) cost every request more than counting it. Copied on write
	// under seriesMu; at most one entry per method label and status.
	series   atomic.Pointer[map[requestKey]prometheus.Counter]
	seriesMu sync.Mutex
	failures *prometheus.CounterVec // upstream failures by kind
	gone     prometheus.Counter     // requests the harness abandoned
	latency  prometheus.Histogram   // upstream time to response headers
}

// FailureCauses are the cause labels of ahp_tap_upstream_failures_total
// (see classify); each series exists from the start, at zero.
var FailureCauses = []string{"refused", "reset", "timeout", "tls_verification", "dns", "closed", "bad_response", "other"}

// NewMetrics builds the metrics. dropped, when not nil, reports the audit
// copies the auditor dropped so far.
func NewMetrics(dropped func() uint64) *Metrics {
	m := &Metrics{
		Base: metrics.NewBase(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahp_tap_http_requests_total",
			Help: "HTTP requests forwarded, by request method and the status the harness received.",
		}, []string{"method", "status"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahp_tap_upstream_failures_total",
			Help: "Requests the upstream failed at the transport level (ahp-tap answered 502/504), by cause.",
		}, []string{"cause"}),
		gone: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ahp_tap_harness_gone_total",
			Help: "Requests the harness abandoned (closed the connection) before the upstream answered; answered 499, not an upstream failure.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ahp_tap_upstream_latency_seconds",
			Help:    "Time from receiving a request to the upstream's response headers.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	m.series.Store(&map[requestKey]prometheus.Counter{})
	m.Register(m.requests, m.failures, m.gone, m.latency)
	for _, c := range FailureCauses {
		m.failures.WithLabelValues(c) // series at zero before the first failure
	}
	if dropped != nil {
		m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ahp_tap_audit_dropped_total",
			Help: "Frames forwarded but not audited because the audit queue was full (reported as TAP-1).",
		}, func() float64 { return float64(dropped()) }))
	}
	return m
}

// Sink counts findings; put it next to the other sinks. A nil *Metrics
// counts nothing.
func (m *Metrics) Sink() tap.Sink {
	if m == nil {
		return tap.SinkFunc(func(tap.Finding) {})
	}
	return m.Base.Sink()
}

// ZeroFindings creates the findings series of checks at zero.
func (m *Metrics) ZeroFindings(checks []string) {
	if m != nil {
		m.Base.ZeroFindings(checks)
	}
}

// Register adds collectors (another sink's counters, say) to the tap's
// metrics. It does nothing on a nil *Metrics.
func (m *Metrics) Register(cs ...prometheus.Collector) {
	if m != nil {
		m.Base.Register(cs...)
	}
}

func (m *Metrics) countRequest(method string, status int) {
	if m == nil {
		return
	}
	switch method {
	case http.MethodPost, http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodHead,
		http.MethodOptions, http.MethodPatch:
	default:
		method = "other" // label values stay a small, fixed set
	}
	k := requestKey{method, status}
	if c, ok := (*m.series.Load())[k]; ok {
		c.Inc()
		return
	}
	m.seriesMu.Lock()
	old := *m.series.Load()
	c, ok := old[k]
	if !ok {
		c = m.requests.WithLabelValues(method, strconv.Itoa(status))
		next := make(map[requestKey]prometheus.Counter, len(old)+1)
		maps.Copy(next, old)
		next[k] = c
		m.series.Store(&next)
	}
	m.seriesMu.Unlock()
	c.Inc()
}

// requestKey names one series of ahp_tap_http_requests_total.
type requestKey struct {
	method string
	status int
}

func (m *Metrics) countFailure(kind string) {
	switch {
	case m == nil:
	case kind == "harness_gone":
		m.gone.Inc() // the harness left: not the upstream's failure
	default:
		m.failures.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) observeLatency(d time.Duration) {
	if m != nil {
		m.latency.Observe(d.Seconds())
	}
}

// CountCuts registers ahp_tap_audit_cut_total: cuts reports the audit
// copies cut to a prefix so far because the audit budget had no room for
// them while their bodies were in flight (tap.Auditor.Cuts).
func (m *Metrics) CountCuts(cuts func() uint64) {
	if m == nil {
		return
	}
	m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "ahp_tap_audit_cut_total",
		Help: "Bodies forwarded whole but audited only as a prefix because the audit budget had no room for their copy (reported as TAP-1).",
	}, func() float64 { return float64(cuts()) }))
}
