package otlpexport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/ahp-tap/ahp-tap/capture"
	tapmetrics "github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/otlpexport/otlptest"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// TestMetricsMatchPrometheus replays the example capture into the traffic
// metrics a stdio tap serves, and pushes them: the collector receives the
// same families under the same names with the same counts as the
// Prometheus registry holds, counters as monotonic cumulative sums and
// the latency as a cumulative histogram; no label holds an id.
func TestMetricsMatchPrometheus(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	x, err := New(Config{Endpoint: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	tr := tapmetrics.NewTraffic()
	fh, err := os.Open(filepath.Join("..", "cmd", "ahp-tap", "testdata", "example.capture.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	err = capture.Replay(capture.NewReader(fh), func(h *capture.Header) (*tap.Session, error) {
		cfg, _ := h.Config(tap.Config{}, capture.Overrides{})
		return tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(rules.Options{}), Sink: tr.Sink(), Recorder: tr.Recorder(nil), Watch: tr}), nil
	}, func(s *tap.Session) { s.Close() })
	if err != nil {
		t.Fatal(err)
	}
	x.ExportMetrics(tr.Gatherer())
	if tap1 := x.Close(5 * time.Second); tap1 != nil {
		t.Fatalf("Close: %v", tap1)
	}
	got := rc.Metrics()
	fams, _ := tr.Gatherer().Gather()
	n := 0
	for _, fam := range fams {
		name := fam.GetName()
		m := got[name]
		if !strings.HasPrefix(name, MetricPrefix) {
			if m != nil {
				t.Errorf("%s pushed: only the ahp_tap_ families are", name)
			}
			continue
		}
		n++
		if m == nil {
			t.Errorf("%s: not pushed", name)
			continue
		}
		for i, pm := range fam.Metric {
			want := map[string]string{}
			for _, l := range pm.Label {
				want[l.GetName()] = l.GetValue()
			}
			switch d := m.Data.(type) {
			case *metricspb.Metric_Sum:
				p := d.Sum.DataPoints[i]
				if !d.Sum.IsMonotonic || d.Sum.AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE ||
					p.GetAsDouble() != pm.GetCounter().GetValue() || !sameLabels(otlptest.KVs(p.Attributes), want) {
					t.Errorf("%s%v: pushed %v %v, Prometheus has %v", name, want, p.GetAsDouble(), otlptest.KVs(p.Attributes), pm.GetCounter().GetValue())
				}
			case *metricspb.Metric_Histogram:
				p := d.Histogram.DataPoints[i]
				var buckets uint64
				for _, c := range p.BucketCounts {
					buckets += c
				}
				if p.Count != pm.GetHistogram().GetSampleCount() || buckets != p.Count || len(p.BucketCounts) != len(p.ExplicitBounds)+1 || m.Unit != "s" {
					t.Errorf("%s%v: pushed count %d (buckets %d, %d bounds, unit %q), Prometheus has %d", name, want, p.Count, buckets, len(p.ExplicitBounds), m.Unit, pm.GetHistogram().GetSampleCount())
				}
			case *metricspb.Metric_Gauge:
				if p := d.Gauge.DataPoints[i]; !sameLabels(otlptest.KVs(p.Attributes), want) {
					t.Errorf("%s: labels %v, want %v", name, otlptest.KVs(p.Attributes), want)
				}
			default:
				t.Errorf("%s: pushed as %T", name, m.Data)
			}
		}
	}
	for _, name := range []string{"ahp_tap_exchanges_total", "ahp_tap_exchange_latency_seconds", "ahp_tap_findings_total", "ahp_tap_frames_audited_total", "ahp_tap_audited_bytes_total", "ahp_tap_audit_dropped_total"} {
		if got[name] == nil {
			t.Errorf("%s not pushed", name)
		}
	}
	if n == 0 {
		t.Fatal("the registry holds no ahp_tap_ family")
	}
	for name, m := range got {
		if s, ok := m.Data.(*metricspb.Metric_Sum); ok {
			for _, p := range s.Sum.DataPoints {
				for k, v := range otlptest.KVs(p.Attributes) {
					if strings.HasPrefix(v, "evt-") || k == "id" {
						t.Errorf("%s: label %s=%s is an id", name, k, v)
					}
				}
			}
		}
	}
}

// TestMetricsToAnAbsentCollector: a push that fails is counted in the
// TAP-1 of Close; OTEL_METRICS_EXPORTER=none pushes nothing.
func TestMetricsToAnAbsentCollector(t *testing.T) {
	rc := otlptest.NewReceiver(t, true)
	t.Setenv("OTEL_LOGS_EXPORTER", "none")
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	x, err := New(Config{Endpoint: rc.URL, ExportTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	x.ExportMetrics(tapmetrics.NewTraffic().Gatherer())
	tap1 := x.Close(300 * time.Millisecond)
	if tap1 == nil || !strings.Contains(tap1.Message, "1 metric pushes were not exported") {
		t.Errorf("Close = %v, want a TAP-1 counting the failed push", tap1)
	}

	ok := otlptest.NewReceiver(t, false)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	x, err = New(Config{Endpoint: ok.URL})
	if err != nil {
		t.Fatal(err)
	}
	x.ExportMetrics(tapmetrics.NewTraffic().Gatherer())
	x.Close(5 * time.Second)
	if len(ok.Metrics()) != 0 || len(ok.Headers()) != 0 {
		t.Errorf("OTEL_METRICS_EXPORTER=none: %d metrics in %d requests pushed", len(ok.Metrics()), len(ok.Headers()))
	}
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
