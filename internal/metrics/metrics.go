// Package metrics holds the Prometheus metrics every tap serves (findings,
// build, process and Go runtime, the handlers) and the traffic families a
// stdio tap's audit side counts. The HTTP tap adds its own (requests by
// status, upstream failures) on the same registry (httpproxy.Metrics).
//
// No label ever holds a credential, a URL, a body or an id: every label
// value comes from a small fixed set, "other" standing for the rest.
package metrics

import (
	"net/http"
	"runtime"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ahp-tap/ahp-tap/tap"
)

// BuildVersion is the version ahp_tap_build_info reports; the command sets
// it to its own.
var BuildVersion = "unknown"

// Base is the metrics of one tap, on a registry of their own. A nil *Base
// counts nothing.
type Base struct {
	reg      *prometheus.Registry
	findings *prometheus.CounterVec // by check and level
}

// NewBase builds the findings counter, the build info and the process and
// Go runtime collectors on a new registry.
func NewBase() *Base {
	b := &Base{
		reg: prometheus.NewRegistry(),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahp_tap_findings_total",
			Help: "Findings reported, by check ID and level.",
		}, []string{"check", "level"}),
	}
	b.reg.MustRegister(b.findings,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "ahp_tap_build_info",
			Help:        "Always 1; the labels say which ahp-tap is running.",
			ConstLabels: prometheus.Labels{"version": BuildVersion, "goversion": runtime.Version()},
		}, func() float64 { return 1 }))
	return b
}

// Register adds collectors to the registry. It does nothing on a nil *Base.
func (b *Base) Register(cs ...prometheus.Collector) {
	if b != nil {
		b.reg.MustRegister(cs...)
	}
}

// Gatherer is the registry, for a push of the same families (OTLP).
func (b *Base) Gatherer() prometheus.Gatherer {
	if b == nil {
		return nil
	}
	return b.reg
}

// Handler serves the metrics in the Prometheus exposition format.
func (b *Base) Handler() http.Handler {
	return promhttp.HandlerFor(b.reg, promhttp.HandlerOpts{})
}

// HealthHandler answers 200 "ok" while the tap runs: a liveness probe
// that, unlike /metrics, costs nothing.
func (b *Base) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
}

// Mux serves /metrics and /healthz.
func (b *Base) Mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", b.Handler())
	mux.Handle("/healthz", b.HealthHandler())
	return mux
}

// ZeroFindings creates the ahp_tap_findings_total series of every check
// and level at zero, so that a dashboard's rate() sees the first finding.
func (b *Base) ZeroFindings(checks []string) {
	if b == nil {
		return
	}
	for _, c := range checks {
		for _, l := range []string{"error", "warn", "info"} {
			b.findings.WithLabelValues(c, l)
		}
	}
}

// Sink counts findings; put it next to the other sinks. The check labels
// are the catalogue's IDs (a bounded set).
func (b *Base) Sink() tap.Sink {
	return tap.SinkFunc(func(f tap.Finding) {
		if b != nil {
			b.findings.WithLabelValues(f.Check, f.Level.String()).Inc()
		}
	})
}

// Bounded returns v when it is one of known, else "other": a label value
// that a peer chooses must not grow the number of series.
func Bounded(v string, known []string) string {
	if slices.Contains(known, v) {
		return v
	}
	return "other"
}
