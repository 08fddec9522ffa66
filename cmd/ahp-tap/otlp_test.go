package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/ahp-tap/ahp-tap/examples"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/otlpexport/otlptest"
)

// demoSession plays the example harness against the demo backend through
// `ahp-tap stdio` with extra flags, and returns the harness's output.
func demoSession(t *testing.T, flags ...string) string {
	t.Helper()
	reg := writeFile(t, "hooks.json", examples.DemoRegistration)
	args := append([]string{"example-harness", "--", tapBinary, "stdio", "--registration", reg, "--hook", examples.DemoHook}, flags...)
	args = append(args, "--", tapBinary, "example-backend", "--mode", "demo")
	out, err := exec.Command(tapBinary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("example-harness: %v\n%s", err, out)
	}
	return string(out)
}

// TestStdioExportsEveryFindingToOTLP runs a live stdio session with
// --otlp-endpoint: the collector receives exactly the findings of the
// violation log, each with the capture path and frame number that let
// replay reproduce it.
func TestStdioExportsEveryFindingToOTLP(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	dir := t.TempDir()
	logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "s.capture")
	demoSession(t, "--log", logPath, "--capture", capPath, "--otlp-endpoint", rc.URL)
	log, _ := os.ReadFile(logPath)
	want := logCounts(t, log)
	got := map[string]int{}
	for _, r := range rc.Records() {
		a := otlptest.Attrs(r)
		got[a[otlpexport.AttrCheck]]++
		if a[otlpexport.AttrCapture] != capPath {
			t.Errorf("%s: %s = %q, want %s", a[otlpexport.AttrCheck], otlpexport.AttrCapture, a[otlpexport.AttrCapture], capPath)
		}
		if a[otlpexport.AttrCheck] == "BASE-9" && (a[otlpexport.AttrFrame] == "" || a[otlpexport.AttrDirection] != "backend" || a[otlpexport.AttrRequestID] == "") {
			t.Errorf("BASE-9 record lacks frame, direction or request id: %v", a)
		}
	}
	if !equalCounts(got, want) || len(want) == 0 {
		t.Errorf("collector received %v, violation log has %v", got, want)
	}
}

// TestStdioWithAHangingCollector: a collector that never answers, or none
// at all, costs no traffic: the session completes as without it, and the
// lost findings are a TAP-1 finding in the log.
func TestStdioWithAHangingCollector(t *testing.T) {
	base := demoSession(t)
	hanging := otlptest.NewReceiver(t, true)
	for name, endpoint := range map[string]string{"hanging": hanging.URL, "absent": "http://127.0.0.1:1"} {
		logPath := filepath.Join(t.TempDir(), "v.log")
		out := demoSession(t, "--log", logPath, "--otlp-endpoint", endpoint)
		if harnessLines(out) != harnessLines(base) {
			t.Errorf("%s collector: the harness saw\n%s\nwithout a collector:\n%s", name, harnessLines(out), harnessLines(base))
		}
		log, _ := os.ReadFile(logPath)
		if !strings.Contains(string(log), `"check":"TAP-1"`) || !strings.Contains(string(log), "not exported to the OTLP collector") {
			t.Errorf("%s collector: no TAP-1 for the lost findings in the log:\n%s", name, log)
		}
		if c := logCounts(t, log); c["STDIO-1"] != 2 || c["BASE-9"] != 1 {
			t.Errorf("%s collector: log %v lacks the session's findings", name, c)
		}
	}
}

// harnessLines keeps what the example harness said about each answer.
func harnessLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "harness: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func TestReplayExportsToOTLP(t *testing.T) {
	t.Parallel()
	rc := otlptest.NewReceiver(t, false)
	capPath := filepath.Join("testdata", "example.capture.jsonl")
	r := runTap(t, "", "replay", "--fail-on", "never", "--format", "json", "--otlp-endpoint", rc.URL, capPath)
	if r.code != 0 {
		t.Fatalf("replay: exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Findings []struct {
			Check string
			Seq   uint64
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	recs := rc.Records()
	if len(recs) != len(rep.Findings) || len(recs) == 0 {
		t.Fatalf("collector received %d records, replay reported %d findings", len(recs), len(rep.Findings))
	}
	frames := map[string]bool{}
	for _, f := range rep.Findings {
		frames[f.Check+"#"+strconv.FormatUint(f.Seq, 10)] = true
	}
	for _, rec := range recs {
		a := otlptest.Attrs(rec)
		if a[otlpexport.AttrCapture] != capPath {
			t.Errorf("record capture %q, want %s", a[otlpexport.AttrCapture], capPath)
		}
		seq := a[otlpexport.AttrFrame]
		if seq == "" {
			seq = "0"
		}
		if !frames[a[otlpexport.AttrCheck]+"#"+seq] {
			t.Errorf("record %s at frame %s is not a finding of the replay", a[otlpexport.AttrCheck], seq)
		}
	}
}

// TestHTTPExportsToOTLP runs `ahp-tap http` with a hanging collector and
// then a working one: traffic is answered either way, the hanging one's
// losses are TAP-1 and a metric, the working one gets the findings.
func TestHTTPExportsToOTLP(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"1900-01-01","effects":[]}}`)
	}))
	defer up.Close()
	for _, hang := range []bool{false, true} {
		rc := otlptest.NewReceiver(t, hang)
		logPath := filepath.Join(t.TempDir(), "v.log")
		lt := startHTTPTap(t, "--upstream", up.URL, "--log", logPath, "--otlp-endpoint", rc.URL, "--metrics", "127.0.0.1:0")
		metricsAddr := lt.waitFor(t, "metrics on", "http://")
		addr := lt.waitFor(t, "listening on", "http://")
		for range 3 {
			resp, err := http.Post("http://"+addr+"/agent-hooks", "application/json", strings.NewReader(
				`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","type":"tool.before"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "1900-01-01") {
				t.Fatalf("hang=%v: harness got %q, want the backend's answer", hang, body)
			}
		}
		mresp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(mresp.Body)
		mresp.Body.Close()
		if !strings.Contains(string(metrics), "ahp_tap_otlp_dropped_total") {
			t.Errorf("hang=%v: metrics lack ahp_tap_otlp_dropped_total", hang)
		}
		lt.cmd.Process.Signal(syscall.SIGTERM)
		<-lt.done
		if err := lt.cmd.Wait(); err != nil {
			t.Fatalf("hang=%v: ahp-tap http: %v\n%s", hang, err, lt.stderrText())
		}
		log, _ := os.ReadFile(logPath)
		counts := logCounts(t, log)
		if hang {
			if counts["TAP-1"] != 1 || !strings.Contains(string(log), "not exported to the OTLP collector") {
				t.Errorf("hanging collector: log %v lacks the TAP-1 for lost findings:\n%s", counts, log)
			}
			continue
		}
		got := map[string]int{}
		for _, r := range rc.Records() {
			got[otlptest.Attrs(r)[otlpexport.AttrCheck]]++
		}
		if !equalCounts(got, counts) || counts["BASE-2"] == 0 {
			t.Errorf("collector received %v, log has %v", got, counts)
		}
	}
}

// TestStdioExportsTracesMetricsAndLogs runs a live stdio session with
// --otlp-endpoint against a real OTLP/HTTP receiver: it receives a span
// per exchange (named by the JSON-RPC method, the hook and the semantic
// conventions' attributes), the findings as log records, each on an
// exchange carrying that exchange's span, and the metrics the
// Prometheus endpoint would serve (exchanges by outcome, findings by
// check). With OTEL_TRACES_EXPORTER=none no span arrives.
func TestStdioExportsTracesMetricsAndLogs(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	logPath := filepath.Join(t.TempDir(), "v.log")
	demoSession(t, "--log", logPath, "--otlp-endpoint", rc.URL)
	spans := map[string]string{} // span id → request id
	for _, sp := range rc.Spans() {
		a := otlptest.KVs(sp.Attributes)
		if sp.Name != a[otlpexport.AttrRPCMethod] || a[otlpexport.AttrRPCSystem] != "jsonrpc" || a[otlpexport.AttrHook] != examples.DemoHook || a[otlpexport.AttrNetTransport] != "pipe" {
			t.Errorf("span %q: attributes %v, want rpc.system.name jsonrpc, the method as name, hook %s", sp.Name, a, examples.DemoHook)
		}
		spans[hex.EncodeToString(sp.SpanId)] = a[otlpexport.AttrRequestID]
	}
	if len(spans) == 0 {
		t.Fatal("the collector received no span")
	}
	log, _ := os.ReadFile(logPath)
	want := logCounts(t, log)
	got, joined := map[string]int{}, 0
	for _, r := range rc.Records() {
		a := otlptest.Attrs(r)
		got[a[otlpexport.AttrCheck]]++
		if id, ok := spans[hex.EncodeToString(r.SpanId)]; ok {
			joined++
			if id != a[otlpexport.AttrRequestID] {
				t.Errorf("%s record on request %q is joined to the span of %q", a[otlpexport.AttrCheck], a[otlpexport.AttrRequestID], id)
			}
		}
	}
	if !equalCounts(got, want) || joined == 0 {
		t.Errorf("collector received %v (%d joined to a span), violation log has %v", got, joined, want)
	}
	ms := rc.Metrics()
	ex, ok := ms["ahp_tap_exchanges_total"].GetData().(*metricspb.Metric_Sum)
	if !ok || len(ex.Sum.DataPoints) == 0 {
		t.Fatalf("metrics %v lack ahp_tap_exchanges_total", len(ms))
	}
	var exchanges float64
	for _, p := range ex.Sum.DataPoints {
		exchanges += p.GetAsDouble()
	}
	answered := 0
	for range spans {
		answered++
	}
	if exchanges == 0 || exchanges > float64(answered) {
		t.Errorf("ahp_tap_exchanges_total sums to %v for %d spans", exchanges, answered)
	}
	var findings float64
	for _, p := range ms["ahp_tap_findings_total"].GetSum().GetDataPoints() {
		findings += p.GetAsDouble()
	}
	total := 0
	for _, n := range want {
		total += n
	}
	if int(findings) != total {
		t.Errorf("ahp_tap_findings_total sums to %v, the log has %d findings", findings, total)
	}

	off := otlptest.NewReceiver(t, false)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	demoSession(t, "--otlp-endpoint", off.URL)
	if len(off.Spans()) != 0 || len(off.Records()) == 0 {
		t.Errorf("OTEL_TRACES_EXPORTER=none: %d spans and %d records received, want none and some", len(off.Spans()), len(off.Records()))
	}
}

// TestHTTPSpanJoinsTheHarnessTrace: a harness request carrying a W3C
// traceparent header through `ahp-tap http` gives a span in that trace,
// child of the harness's span; no header value (the bearer token) appears
// in any span.
func TestHTTPSpanJoinsTheHarnessTrace(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","error":{"code":-32603,"message":"policy store down"}}`)
	}))
	defer up.Close()
	rc := otlptest.NewReceiver(t, false)
	lt := startHTTPTap(t, "--upstream", up.URL, "--otlp-endpoint", rc.URL)
	addr := lt.waitFor(t, "listening on", "http://")
	const secret = "tok-9f8e7d6c5b4a39281706"
	for _, tp := range []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", ""} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/agent-hooks", strings.NewReader(
			`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","type":"tool.before"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		if tp != "" {
			req.Header.Set("Traceparent", tp)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	lt.cmd.Wait()
	sps := rc.Spans()
	if len(sps) != 2 {
		t.Fatalf("received %d spans, want 2", len(sps))
	}
	joined := 0
	for _, sp := range sps {
		a := otlptest.KVs(sp.Attributes)
		if hex.EncodeToString(sp.TraceId) == "0af7651916cd43dd8448eb211c80319c" && hex.EncodeToString(sp.ParentSpanId) == "b7ad6b7169203331" {
			joined++
		} else if len(sp.ParentSpanId) != 0 {
			t.Errorf("span without a traceparent has parent %x", sp.ParentSpanId)
		}
		if a[otlpexport.AttrResponseStatus] != "-32603" || a[otlpexport.AttrErrorType] != "-32603" || a[otlpexport.AttrNetTransport] != "tcp" {
			t.Errorf("span attributes %v, want rpc.response.status_code and error.type -32603 over tcp", a)
		}
		if strings.Contains(sp.String(), secret) {
			t.Errorf("a span holds the bearer token: %v", sp)
		}
	}
	if joined != 1 {
		t.Errorf("%d spans joined the harness's trace, want 1", joined)
	}
}

// TestPerEventTapsExportSpans runs ten per_event events through taps
// sharing --state (so one shared audit process audits them) with
// --otlp-endpoint: each event is one span, the events answered
// correctly end at their answer without error, the one whose backend
// exited without answering ends at the end of its stream as unanswered,
// and the metrics pushed count the exchanges answered.
func TestPerEventTapsExportSpans(t *testing.T) {
	dir := t.TempDir()
	backend := writeScript(t, dir)
	rc := otlptest.NewReceiver(t, false)
	state := filepath.Join(dir, "state")
	flags := []string{"--lifecycle", "per_event", "--state", state, "--summary=false", "--otlp-endpoint", rc.URL}
	for i := range 10 {
		runEvent(t, intercept(fmt.Sprintf("e%d", i), "ls"), flags, backend)
	}
	waitNoServer(t, state) // every link closed, its exporter flushed
	got := map[string]map[string]string{}
	errs := map[string]bool{}
	for _, sp := range rc.Spans() {
		a := otlptest.KVs(sp.Attributes)
		id := a[otlpexport.AttrRequestID]
		if got[id] != nil {
			t.Errorf("two spans for %s", id)
		}
		got[id] = a
		errs[id] = sp.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR
	}
	if len(got) != 10 {
		t.Fatalf("spans for %d events, want 10: %v", len(got), got)
	}
	for _, id := range []string{"e1", "e2", "e4", "e5", "e6", "e8", "e9"} {
		if a := got[id]; errs[id] || a[otlpexport.AttrSpanEnd] != otlpexport.EndAnswer || a[otlpexport.AttrOutcome] != "no_effect" {
			t.Errorf("conforming %s: error %v, attributes %v; want no error, ended at the answer", id, errs[id], a)
		}
	}
	if a := got["e7"]; !errs["e7"] || a[otlpexport.AttrSpanEnd] != otlpexport.EndEndOfStream || a[otlpexport.AttrOutcome] != "unanswered" {
		t.Errorf("e7, never answered: error %v, attributes %v; want error, unanswered at the end of the stream", errs["e7"], a)
	}
	var exchanges float64
	for _, p := range rc.Metrics()["ahp_tap_exchanges_total"].GetSum().GetDataPoints() {
		exchanges += p.GetAsDouble()
	}
	if exchanges < 8 {
		t.Errorf("ahp_tap_exchanges_total pushed %v, want the answered exchanges (at least 8)", exchanges)
	}
}
