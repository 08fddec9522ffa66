// Package otlptest is a real OTLP/HTTP receiver for tests (logs, traces
// and metrics): an httptest server that decodes every export request with
// the official OTLP protobuf types (go.opentelemetry.io/proto/otlp).
package otlptest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// A Receiver is a real OTLP/HTTP endpoint (/v1/logs, /v1/traces,
// /v1/metrics): it decodes each export request with the official OTLP
// protobuf types and keeps what arrived.
type Receiver struct {
	*httptest.Server
	mu       sync.Mutex // guards the fields below
	records  []*logspb.LogRecord
	resource []*commonpb.KeyValue
	requests int
	spans    []*tracepb.Span
	metrics  [][]*metricspb.Metric // per request
	headers  []http.Header
}

// NewReceiver starts a receiver. With hang set, every request waits until
// the test ends before being answered.
func NewReceiver(t testing.TB, hang bool) *Receiver {
	rc := &Receiver{}
	release := make(chan struct{})
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		if r.Method != http.MethodPost || (r.URL.Path != "/v1/logs" && r.URL.Path != "/v1/traces" && r.URL.Path != "/v1/metrics") {
			http.Error(w, "not an OTLP endpoint", http.StatusNotFound)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, _ := io.ReadAll(body)
		rc.mu.Lock()
		rc.headers = append(rc.headers, r.Header.Clone())
		rc.mu.Unlock()
		switch r.URL.Path {
		case "/v1/traces":
			var req coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(data, &req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			rc.mu.Lock()
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					rc.spans = append(rc.spans, ss.Spans...)
				}
			}
			rc.mu.Unlock()
			out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(out)
			return
		case "/v1/metrics":
			var req colmetricspb.ExportMetricsServiceRequest
			if err := proto.Unmarshal(data, &req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var ms []*metricspb.Metric
			for _, rm := range req.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					ms = append(ms, sm.Metrics...)
				}
			}
			rc.mu.Lock()
			rc.metrics = append(rc.metrics, ms)
			rc.mu.Unlock()
			out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(out)
			return
		}
		var req collogspb.ExportLogsServiceRequest
		if err := proto.Unmarshal(data, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.requests++
		for _, rl := range req.ResourceLogs {
			rc.resource = rl.GetResource().GetAttributes()
			for _, sl := range rl.ScopeLogs {
				rc.records = append(rc.records, sl.LogRecords...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&collogspb.ExportLogsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rc.Server.Close)
	t.Cleanup(func() { close(release) }) // runs first: lets hanging handlers return
	return rc
}

// Records returns the records received so far.
func (rc *Receiver) Records() []*logspb.LogRecord {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*logspb.LogRecord(nil), rc.records...)
}

// Attrs flattens a record's attributes to text.
func Attrs(r *logspb.LogRecord) map[string]string { return KVs(r.Attributes) }

// Resource returns the resource attributes of the latest request.
func (rc *Receiver) Resource() []*commonpb.KeyValue {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.resource
}

// Spans returns the spans received so far.
func (rc *Receiver) Spans() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...)
}

// Metrics returns the metrics of the latest metrics request, by name.
func (rc *Receiver) Metrics() map[string]*metricspb.Metric {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]*metricspb.Metric{}
	if len(rc.metrics) > 0 {
		for _, m := range rc.metrics[len(rc.metrics)-1] {
			out[m.Name] = m
		}
	}
	return out
}

// Headers returns the headers of every request received so far.
func (rc *Receiver) Headers() []http.Header {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]http.Header(nil), rc.headers...)
}

// KVs flattens attributes to text.
func KVs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_ArrayValue:
			s := ""
			for i, e := range v.ArrayValue.Values {
				if i > 0 {
					s += ","
				}
				s += e.GetStringValue()
			}
			out[kv.Key] = s
		default:
			out[kv.Key] = kv.Value.String()
		}
	}
	return out
}
