package httpproxy

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Metrics are the Prometheus metrics of one tap, on a registry of their
// own. No label ever holds a credential, a URL or a body. A nil *Metrics
// counts nothing.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec // by HTTP method and status answered to the harness
	findings *prometheus.CounterVec // by check and level
	failures *prometheus.CounterVec // upstream failures by kind
	latency  prometheus.Histogram   // upstream time to response headers
}

// NewMetrics builds the metrics. dropped, when not nil, reports the audit
// copies the auditor dropped so far.
func NewMetrics(dropped func() uint64) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahp_tap_http_requests_total",
			Help: "HTTP requests forwarded, by request method and the status the harness received.",
		}, []string{"method", "status"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahp_tap_findings_total",
			Help: "Findings reported, by check ID and level.",
		}, []string{"check", "level"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahp_tap_upstream_failures_total",
			Help: "Requests the upstream failed at the transport level (ahp-tap answered 502/504), by cause.",
		}, []string{"cause"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ahp_tap_upstream_latency_seconds",
			Help:    "Time from receiving a request to the upstream's response headers.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	m.reg.MustRegister(m.requests, m.findings, m.failures, m.latency)
	if dropped != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ahp_tap_audit_dropped_total",
			Help: "Frames forwarded but not audited because the audit queue was full (reported as TAP-1).",
		}, func() float64 { return float64(dropped()) }))
	}
	return m
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Sink counts findings; put it next to the other sinks.
func (m *Metrics) Sink() tap.Sink {
	return tap.SinkFunc(func(f tap.Finding) {
		if m != nil {
			m.findings.WithLabelValues(f.Check, f.Level.String()).Inc()
		}
	})
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
	m.requests.WithLabelValues(method, strconv.Itoa(status)).Inc()
}

func (m *Metrics) countFailure(kind string) {
	if m != nil {
		m.failures.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) observeLatency(d time.Duration) {
	if m != nil {
		m.latency.Observe(d.Seconds())
	}
}
