package otlpexport

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/ahp-tap/ahp-tap/otlpexport/otlptest"
	"github.com/ahp-tap/ahp-tap/tap"
)

const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func finding(i int) tap.Finding {
	f := tap.Finding{Check: "BASE-2", Requirement: "AHP-VER-001", Rule: "BASE-2/version", Level: tap.Error,
		Message: fmt.Sprintf("finding %d", i), Pointer: "/result/protocolVersion", Seq: uint64(i + 1),
		Dir: tap.FromBackend, Conn: "stdio:1", RPCID: `"evt_1"`, EventID: "evt_1", EventType: "tool.before",
		Time: time.Date(2026, 8, 24, 8, 51, 14, 0, time.UTC)}
	switch i % 3 {
	case 1:
		f.Level, f.Check, f.Rule, f.Requirement = tap.Warn, "STDIO-1", "STDIO-1/banner", ""
	case 2:
		f.TraceParent = traceparent
	}
	return f
}

func TestEveryFindingArrivesWithItsAttributes(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	x, err := New(Config{Endpoint: rc.URL, Capture: "/var/log/ahp-tap/s.capture", Version: "9.9"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		x.Write(finding(i))
	}
	if tap1 := x.Close(5 * time.Second); tap1 != nil {
		t.Fatalf("Close reported %v with a working collector", tap1)
	}
	recs := rc.Records()
	if len(recs) != n || x.Exported() != n || x.Dropped() != 0 {
		t.Fatalf("received %d records (exported %d, dropped %d), want %d", len(recs), x.Exported(), x.Dropped(), n)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		body := r.Body.GetStringValue()
		seen[body] = true
		var i int
		fmt.Sscanf(body, "finding %d", &i)
		want := finding(i)
		a := otlptest.Attrs(r)
		for k, v := range map[string]string{
			AttrCheck: want.Check, AttrRule: want.Rule, AttrPointer: want.Pointer, AttrDirection: "backend",
			AttrEventType: "tool.before", AttrEventID: "evt_1", AttrRequestID: "evt_1", AttrConn: "stdio:1",
			AttrCapture: "/var/log/ahp-tap/s.capture", AttrFrame: fmt.Sprint(i + 1),
		} {
			if a[k] != v {
				t.Errorf("%s: attribute %s = %q, want %q", body, k, a[k], v)
			}
		}
		if want.Requirement != "" && a[AttrRequirement] != want.Requirement {
			t.Errorf("%s: %s = %q, want %q", body, AttrRequirement, a[AttrRequirement], want.Requirement)
		}
		wantSev := logspb.SeverityNumber_SEVERITY_NUMBER_ERROR
		if want.Level == tap.Warn {
			wantSev = logspb.SeverityNumber_SEVERITY_NUMBER_WARN
		}
		if r.SeverityNumber != wantSev || r.SeverityText != want.Level.String() {
			t.Errorf("%s: severity %v %q, want %v %q", body, r.SeverityNumber, r.SeverityText, wantSev, want.Level)
		}
		if got := time.Unix(0, int64(r.TimeUnixNano)).UTC(); !got.Equal(want.Time) {
			t.Errorf("%s: time %v, want the frame's %v", body, got, want.Time)
		}
		if want.TraceParent != "" {
			if hex.EncodeToString(r.TraceId) != "0af7651916cd43dd8448eb211c80319c" || hex.EncodeToString(r.SpanId) != "b7ad6b7169203331" {
				t.Errorf("%s: trace %x span %x, want the event's traceparent", body, r.TraceId, r.SpanId)
			}
		} else if len(r.TraceId) != 0 && !bytes.Equal(r.TraceId, make([]byte, 16)) {
			t.Errorf("%s: trace id %x without a traceparent", body, r.TraceId)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct findings received, want %d", len(seen), n)
	}
	res := map[string]string{}
	for _, kv := range rc.Resource() {
		res[kv.Key] = kv.Value.GetStringValue()
	}
	if res["service.name"] != "ahp-tap" || res["service.version"] != "9.9" {
		t.Errorf("resource %v, want service.name ahp-tap and service.version 9.9", res)
	}
}

// TestSlowOrAbsentCollectorNeverBlocks: with a collector that never
// answers, or none at all, Write returns at once every time, Close returns
// within its bound, and every finding is counted as not exported, in a
// TAP-1 finding.
func TestSlowOrAbsentCollectorNeverBlocks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	absent := "http://" + ln.Addr().String()
	ln.Close()
	for name, endpoint := range map[string]string{
		"hanging": otlptest.NewReceiver(t, true).URL,
		"absent":  absent,
	} {
		x, err := New(Config{Endpoint: endpoint, Queue: 64, ExportTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		const n = 1000
		for i := range n {
			x.Write(finding(i)) // would hang the test if it waited for the collector
		}
		tap1 := x.Close(300 * time.Millisecond)
		if x.Dropped() != n || x.Exported() != 0 {
			t.Errorf("%s: dropped %d exported %d, want %d and 0", name, x.Dropped(), x.Exported(), n)
		}
		if tap1 == nil || tap1.Check != "TAP-1" || !strings.Contains(tap1.Message, fmt.Sprintf("%d findings were not exported", n)) {
			t.Errorf("%s: Close = %+v, want a TAP-1 finding counting %d", name, tap1, n)
		}
		if again := x.Close(time.Second); again != nil {
			t.Errorf("%s: second Close = %v, want nil", name, again)
		}
	}
}

func TestEndpointFromTheEnvironment(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_SERVICE_NAME", "staging-tap")
	if !Enabled("") {
		t.Fatal("Enabled ignores OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	x, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	x.Write(finding(0))
	x.Close(5 * time.Second)
	if len(rc.Records()) != 1 {
		t.Fatalf("received %d records through OTEL_EXPORTER_OTLP_ENDPOINT, want 1", len(rc.Records()))
	}
	for _, kv := range rc.Resource() {
		if kv.Key == "service.name" && kv.Value.GetStringValue() != "staging-tap" {
			t.Errorf("service.name %q, want OTEL_SERVICE_NAME's staging-tap", kv.Value.GetStringValue())
		}
	}
}

func TestBadEndpoint(t *testing.T) {
	for _, e := range []string{"collector:4318", "ftp://x/", "http://"} {
		if _, err := New(Config{Endpoint: e}); err == nil {
			t.Errorf("New(%q): no error", e)
		}
	}
}

func TestSpanContext(t *testing.T) {
	for tp, ok := range map[string]bool{
		traceparent: true,
		"00-00000000000000000000000000000000-b7ad6b7169203331-01": false,
		"00-0af7651916cd43dd8448eb211c80319c-01":                  false,
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01": false,
		"": false,
	} {
		if _, got := spanContext(tp); got != ok {
			t.Errorf("spanContext(%q) ok = %v, want %v", tp, got, ok)
		}
	}
}

// The semantic conventions' jsonrpc.request.id is the id's string form: a
// string id without its JSON quotes, a number as written, no attribute for
// null.
func TestRequestIDSemconvForm(t *testing.T) {
	for wire, want := range map[string]string{
		`"evt_1"`: "evt_1", `"a\"b"`: `a"b`, `7`: "7", `-1.5e3`: "-1.5e3", `null`: "", ``: "",
	} {
		if got := requestID(wire); got != want {
			t.Errorf("requestID(%s) = %q, want %q", wire, got, want)
		}
	}
	if AttrRequestID != "jsonrpc.request.id" {
		t.Errorf("AttrRequestID = %q: the deprecated rpc.jsonrpc.request_id was replaced by jsonrpc.request.id", AttrRequestID)
	}
}

// Two exporters of one process (the routes of one ahp-tap http): one
// series each for exported and dropped, their sums.
func TestCollectorsSumExporters(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	absent := "http://" + ln.Addr().String()
	ln.Close()
	up, err := New(Config{Endpoint: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	down, err := New(Config{Endpoint: absent, ExportTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		up.Write(finding(i))
		down.Write(finding(i))
	}
	up.Close(5 * time.Second)
	down.Close(300 * time.Millisecond)
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collectors(up, down)...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
	}
	if got["ahp_tap_otlp_exported_total"] != 3 || got["ahp_tap_otlp_dropped_total"] != 3 {
		t.Errorf("series %v, want 3 exported (one exporter) and 3 dropped (the other)", got)
	}
}
