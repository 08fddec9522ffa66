package httpproxy

import "github.com/prometheus/client_golang/prometheus"

// Register adds collectors (another sink's counters, say) to the tap's
// metrics. It does nothing on a nil *Metrics.
func (m *Metrics) Register(cs ...prometheus.Collector) {
	if m != nil {
		m.reg.MustRegister(cs...)
	}
}
