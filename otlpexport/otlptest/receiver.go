// Package otlptest is a real OTLP/HTTP logs receiver for tests: an
// httptest server that decodes every export request with the official
// OTLP protobuf types (go.opentelemetry.io/proto/otlp).
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
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"
)

// A Receiver is a real OTLP/HTTP logs endpoint: it decodes each export
// request with the official OTLP protobuf types and keeps the records.
type Receiver struct {
	*httptest.Server
	mu       sync.Mutex // guards the fields below
	records  []*logspb.LogRecord
	resource []*commonpb.KeyValue
	requests int
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
		if r.Method != http.MethodPost || r.URL.Path != "/v1/logs" {
			http.Error(w, "not the logs endpoint", http.StatusNotFound)
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
func Attrs(r *logspb.LogRecord) map[string]string {
	out := map[string]string{}
	for _, kv := range r.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = fmt.Sprint(v.IntValue)
		default:
			out[kv.Key] = kv.Value.String()
		}
	}
	return out
}

// Resource returns the resource attributes of the latest request.
func (rc *Receiver) Resource() []*commonpb.KeyValue {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.resource
}
