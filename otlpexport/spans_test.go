package otlpexport

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/otlpexport/otlptest"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// replayInto replays the example capture (stdio: evt-1 answered and
// conforming, evt-2 answered late with a deny and a wrong
// protocolVersion, evt-3 answered in a frame that is not UTF-8, evt-4
// never answered) into a session whose findings and
// judged frames go to x, and returns the findings.
func replayInto(t *testing.T, x *Exporter) []tap.Finding {
	t.Helper()
	fh, err := os.Open(filepath.Join("..", "cmd", "ahp-tap", "testdata", "example.capture.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var got []tap.Finding
	sink := tap.MultiSink{tap.SinkFunc(func(f tap.Finding) { got = append(got, f) }), x}
	err = capture.Replay(capture.NewReader(fh), func(h *capture.Header) (*tap.Session, error) {
		cfg, err := h.Config(tap.Config{}, capture.Overrides{})
		if err != nil {
			return nil, err
		}
		return tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(rules.Options{}), Sink: sink, Conn: h.Conn, Watch: x.Watcher()}), nil
	}, func(s *tap.Session) { s.Close() })
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func spanAttrs(sp *tracepb.Span) map[string]string { return otlptest.KVs(sp.Attributes) }

// TestOneSpanPerExchange replays a capture with a conforming exchange,
// two violating ones and one never answered: each is one CLIENT span with the
// JSON-RPC semantic conventions' attributes; the violating one has its
// findings as events and status error, the conforming one neither; the
// log records of the findings carry their span's ids.
func TestOneSpanPerExchange(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	x, err := New(Config{Endpoint: rc.URL, Hook: "com.example.review", Version: "9.9"})
	if err != nil {
		t.Fatal(err)
	}
	findings := replayInto(t, x)
	if tap1 := x.Close(5 * time.Second); tap1 != nil {
		t.Fatalf("Close reported %v with a working collector", tap1)
	}
	byID := map[string]*tracepb.Span{}
	for _, sp := range rc.Spans() {
		a := spanAttrs(sp)
		id := a[AttrRequestID]
		if byID[id] != nil {
			t.Errorf("two spans for request %q", id)
		}
		byID[id] = sp
		if sp.Kind != tracepb.Span_SPAN_KIND_CLIENT || sp.Name != "hooks/intercept" {
			t.Errorf("%s: kind %v name %q, want CLIENT hooks/intercept", id, sp.Kind, sp.Name)
		}
		for k, v := range map[string]string{AttrRPCSystem: "jsonrpc", AttrRPCMethod: "hooks/intercept", AttrJSONRPCVersion: "2.0",
			AttrEventType: "tool.before", AttrEventID: id, AttrHook: "com.example.review", AttrConn: "stdio:4242", AttrNetTransport: "pipe"} {
			if a[k] != v {
				t.Errorf("%s: %s = %q, want %q", id, k, a[k], v)
			}
		}
		if _, ok := a["rpc.jsonrpc.request_id"]; ok {
			t.Errorf("%s: the deprecated rpc.jsonrpc.request_id is exported", id)
		}
		if sp.EndTimeUnixNano < sp.StartTimeUnixNano || sp.StartTimeUnixNano == 0 {
			t.Errorf("%s: span from %d to %d", id, sp.StartTimeUnixNano, sp.EndTimeUnixNano)
		}
	}
	if len(byID) != 4 {
		t.Fatalf("received spans for %v, want evt-1…evt-4", keys(byID))
	}
	ok, bad := byID["evt-1"], byID["evt-2"]
	if a := spanAttrs(ok); ok.Status != nil || len(ok.Events) != 0 || a[AttrOutcome] != tap.OutcomeNoEffect || a[AttrSpanEnd] != EndAnswer || a[AttrFindingsError] != "" {
		t.Errorf("conforming evt-1: status %v, %d events, attributes %v; want no error, no event, outcome no_effect", ok.Status, len(ok.Events), a)
	}
	a := spanAttrs(bad)
	if bad.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || a[AttrOutcome] != tap.OutcomeLate || a[AttrErrorType] != tap.OutcomeLate ||
		a[AttrEffectTypes] != "deny" || a[AttrFindingsError] != "1" || a[AttrFindingsWarn] != "1" || a[AttrSpanEnd] != EndAnswer {
		t.Errorf("violating evt-2: status %v, attributes %v; want error, outcome and error.type late, effect types deny, 1 error and 1 warning finding", bad.Status, a)
	}
	var checks []string
	for _, ev := range bad.Events {
		ea := otlptest.KVs(ev.Attributes)
		if ev.Name != SpanEventFinding || ea[AttrLevel] == "" || ea[AttrRequirement] == "" {
			t.Errorf("evt-2 event %q %v lacks a level or requirement", ev.Name, ea)
		}
		checks = append(checks, ea[AttrCheck]+" "+ea[AttrPointer])
	}
	if !contains(checks, "BASE-2 /result/protocolVersion") || !contains(checks, "CORR-3 ") {
		t.Errorf("evt-2 events %v lack BASE-2 at /result/protocolVersion and CORR-3", checks)
	}
	if sp, a := byID["evt-3"], spanAttrs(byID["evt-3"]); sp.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || len(sp.Events) != 1 || a[AttrSpanEnd] != EndAnswer {
		t.Errorf("evt-3 answered in a frame that is not UTF-8: status %v, %d events, attributes %v; want error, the BASE-1 event, ended at the answer", sp.Status, len(sp.Events), a)
	}
	if sp, a := byID["evt-4"], spanAttrs(byID["evt-4"]); sp.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || a[AttrSpanEnd] != EndEndOfStream ||
		a[AttrOutcome] != tap.OutcomeUnanswered || sp.EndTimeUnixNano < sp.StartTimeUnixNano {
		t.Errorf("unanswered evt-4: status %v, attributes %v; want error, outcome unanswered, ended at the end of the stream", sp.Status, a)
	}
	// Log records: the findings on an exchange carry its span's ids.
	recs := rc.Records()
	if len(recs) != len(findings) {
		t.Fatalf("%d log records for %d findings", len(recs), len(findings))
	}
	joined := 0
	for _, r := range recs {
		la := otlptest.Attrs(r)
		sp := byID[la[AttrRequestID]]
		if sp == nil || la[AttrConn] != "stdio:4242" {
			continue
		}
		joined++
		if hex.EncodeToString(r.TraceId) != hex.EncodeToString(sp.TraceId) || hex.EncodeToString(r.SpanId) != hex.EncodeToString(sp.SpanId) {
			t.Errorf("%s record on %s: trace %x span %x, want the exchange's %x %x", la[AttrCheck], la[AttrRequestID], r.TraceId, r.SpanId, sp.TraceId, sp.SpanId)
		}
	}
	if joined == 0 {
		t.Error("no log record was joined to an exchange's span")
	}
}

// TestSpanJoinsTheHarnessTrace: a request carrying the W3C traceparent
// header (HTTP) or event extension makes its span a child in that trace;
// one without starts a trace of its own.
func TestSpanJoinsTheHarnessTrace(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	x, err := New(Config{Endpoint: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.HTTP}, Rules: rules.Set(rules.Options{}), Sink: x, Watch: x.Watcher()})
	now := time.Now()
	req := func(id, ext string) string {
		return `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id + `","type":"tool.before"` + ext + `}}}`
	}
	const extTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	header := map[string][]string{"Traceparent": {traceparent}, "Tracestate": {"vendor=1"}}
	frames := []struct {
		raw string
		dir tap.Direction
		h   map[string][]string
	}{
		{req("h", ""), tap.FromHarness, header},
		{`{"jsonrpc":"2.0","id":"h","error":{"code":-32603,"message":"down"}}`, tap.FromBackend, nil},
		{req("e", `,"extensions":{"org.w3c.trace_context":{"traceparent":"00-`+extTrace+`-00f067aa0ba902b7-01"}}`), tap.FromHarness, nil},
		{`{"jsonrpc":"2.0","id":"e","result":{"protocolVersion":"draft","effects":[]}}`, tap.FromBackend, nil},
		{req("n", ""), tap.FromHarness, nil},
		{`{"jsonrpc":"2.0","id":"n","result":{"protocolVersion":"draft","effects":[]}}`, tap.FromBackend, nil},
		{`{"jsonrpc":"2.0","id":"m","method":"x/custom-1234","params":{}}`, tap.FromHarness, nil},
		{`{"jsonrpc":"2.0","id":"m","result":{}}`, tap.FromBackend, nil},
	}
	for i, fr := range frames {
		f := &tap.Frame{Dir: fr.dir, Time: now.Add(time.Duration(i) * time.Millisecond), Transport: tap.HTTP, Conn: "http:1", Raw: []byte(fr.raw),
			HTTP: &tap.HTTPMeta{Header: fr.h}}
		s.Frame(f)
	}
	s.Close()
	x.Close(5 * time.Second)
	got := map[string]*tracepb.Span{}
	for _, sp := range rc.Spans() {
		got[spanAttrs(sp)[AttrRequestID]] = sp
	}
	h, e, n := got["h"], got["e"], got["n"]
	if h == nil || e == nil || n == nil {
		t.Fatalf("spans %v, want h, e and n", keys(got))
	}
	if hex.EncodeToString(h.TraceId) != "0af7651916cd43dd8448eb211c80319c" || hex.EncodeToString(h.ParentSpanId) != "b7ad6b7169203331" || h.TraceState != "" {
		t.Errorf("h: trace %x parent %x state %q, want the traceparent header's ids and no header value", h.TraceId, h.ParentSpanId, h.TraceState)
	}
	if a := spanAttrs(h); h.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || a[AttrResponseStatus] != "-32603" || a[AttrErrorType] != "-32603" || a[AttrNetTransport] != "tcp" {
		t.Errorf("h: status %v attributes %v, want error with rpc.response.status_code and error.type -32603", h.Status, a)
	}
	if hex.EncodeToString(e.TraceId) != extTrace || hex.EncodeToString(e.ParentSpanId) != "00f067aa0ba902b7" {
		t.Errorf("e: trace %x parent %x, want the event extension's", e.TraceId, e.ParentSpanId)
	}
	if len(n.ParentSpanId) != 0 || hex.EncodeToString(n.TraceId) == extTrace || hex.EncodeToString(n.TraceId) == "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("n: trace %x parent %x, want a root span of its own trace", n.TraceId, n.ParentSpanId)
	}
	if m, a := got["m"], spanAttrs(got["m"]); m == nil || m.Name != "_OTHER" || a[AttrRPCMethod] != "_OTHER" || a[AttrRPCMethodOriginal] != "x/custom-1234" {
		t.Errorf("a method AHP does not define: span %q, attributes %v; want _OTHER, the method as rpc.method_original", m.GetName(), a)
	}
	if a := spanAttrs(h); a[AttrRPCMethodOriginal] != "" || h.Name != "hooks/intercept" {
		t.Errorf("h: name %q, rpc.method_original %q; want hooks/intercept and none", h.Name, a[AttrRPCMethodOriginal])
	}
	if a := spanAttrs(n); a[AttrErrorType] != "" || a[AttrResponseStatus] != "" || a[AttrOutcome] != tap.OutcomeNoEffect {
		t.Errorf("n: attributes %v, want a successful call (no error.type, no status code)", a)
	}
}

// TestTracesOffByEnvironment: OTEL_TRACES_EXPORTER=none leaves the logs
// and sends no span.
func TestTracesOffByEnvironment(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	x, err := New(Config{Endpoint: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	if x.Watcher() != nil {
		t.Error("Watcher() is not nil with OTEL_TRACES_EXPORTER=none")
	}
	replayInto(t, x)
	x.Close(5 * time.Second)
	if len(rc.Spans()) != 0 || len(rc.Records()) == 0 {
		t.Errorf("received %d spans and %d records, want none and some", len(rc.Spans()), len(rc.Records()))
	}
}

// TestSpansToAHangingCollector: spans a collector never takes are counted
// in the TAP-1 of Close, which returns within its bound.
func TestSpansToAHangingCollector(t *testing.T) {
	rc := otlptest.NewReceiver(t, true)
	t.Setenv("OTEL_LOGS_EXPORTER", "none")
	x, err := New(Config{Endpoint: rc.URL, ExportTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	replayInto(t, x)
	tap1 := x.Close(300 * time.Millisecond)
	if x.SpansDropped() != 4 || x.SpansExported() != 0 {
		t.Errorf("spans dropped %d exported %d, want 4 and 0", x.SpansDropped(), x.SpansExported())
	}
	if tap1 == nil || !strings.Contains(tap1.Message, "4 exchange spans were not exported") {
		t.Errorf("Close = %v, want a TAP-1 counting 4 spans", tap1)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// TestSignalSettingsFromTheEnvironment: the traces and metrics requests
// carry OTEL_EXPORTER_OTLP_HEADERS and are gzipped with
// OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=gzip; a collector that refuses
// them is said on Diag without the credential of its URL or headers.
func TestSignalSettingsFromTheEnvironment(t *testing.T) {
	const secret = "s3cr3t-7c1e0a9b8d"
	rc := otlptest.NewReceiver(t, false)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20"+secret+",X-Tenant=blue")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
	t.Setenv("OTEL_LOGS_EXPORTER", "none")
	x, err := New(Config{Endpoint: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	replayInto(t, x)
	x.Close(5 * time.Second)
	if len(rc.Spans()) != 4 {
		t.Fatalf("received %d spans, want 4", len(rc.Spans()))
	}
	for _, h := range rc.Headers() {
		if h.Get("Authorization") != "Bearer "+secret || h.Get("X-Tenant") != "blue" || h.Get("Content-Encoding") != "gzip" {
			t.Errorf("request headers %v, want the OTEL_EXPORTER_OTLP_HEADERS and gzip", h)
		}
	}

	var diag strings.Builder
	refusing := strings.Replace(rc.URL, "http://", "http://user:"+secret+"@", 1) + "/refuse"
	x, err = New(Config{Endpoint: refusing, Diag: &syncWriter{b: &diag}})
	if err != nil {
		t.Fatal(err)
	}
	replayInto(t, x)
	tap1 := x.Close(5 * time.Second)
	if tap1 == nil || !strings.Contains(tap1.Message, "4 exchange spans") || strings.Contains(tap1.Message, secret) {
		t.Errorf("Close = %v, want a TAP-1 counting 4 spans without the credential", tap1)
	}
	if d := diag.String(); !strings.Contains(d, "404") || strings.Contains(d, secret) {
		t.Errorf("diagnostics %q: want the refusal said, never the credential", d)
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestSpansStayBounded: with a collector that never answers, 4,596
// requests never answered keep at most maxOpenSpans open and the bytes
// held within maxSpanBytes, and every span is accounted for at Close:
// exported or counted as dropped.
func TestSpansStayBounded(t *testing.T) {
	rc := otlptest.NewReceiver(t, true)
	t.Setenv("OTEL_LOGS_EXPORTER", "none")
	x, err := New(Config{Endpoint: rc.URL, ExportTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.HTTP, KeepAnswered: -1}, Rules: rules.Set(rules.Options{}), Sink: x, Watch: x.Watcher()})
	now := time.Now()
	const n = maxOpenSpans + 500
	long := strings.Repeat("x", 4096) // a peer-chosen id far longer than any attribute
	for i := range n {
		id := fmt.Sprint(i)
		if i%500 == 0 {
			id = long + id
		}
		s.Frame(&tap.Frame{Dir: tap.FromHarness, Time: now.Add(time.Duration(i) * time.Microsecond), Transport: tap.HTTP, Conn: "http:1",
			Raw: []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e","type":"tool.before"}}}`)})
		x.spans.mu.Lock()
		open, held := len(x.spans.open), x.spans.held()
		x.spans.mu.Unlock()
		if open > maxOpenSpans || held > maxSpanBytes {
			t.Fatalf("after %d requests: %d spans open, %d bytes held; bounds %d and %d", i+1, open, held, maxOpenSpans, maxSpanBytes)
		}
	}
	x.Close(200 * time.Millisecond)
	s.Close()
	if got := x.SpansDropped() + x.SpansExported(); got != n {
		t.Errorf("%d spans dropped and %d exported, want %d in all", x.SpansDropped(), x.SpansExported(), n)
	}
}
