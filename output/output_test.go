package output

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	tapmetrics "github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/otlpexport/otlptest"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// TestOutputOfASession feeds a real session through an Output with a log,
// a console and a capture, and checks what each received, the summary,
// and that the files are 0600.
func TestOutputOfASession(t *testing.T) {
	dir := t.TempDir()
	logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "s.capture")
	var console, diag bytes.Buffer
	o, err := Open(Config{Name: "test", Diag: &diag, Console: &console, Log: logPath, Capture: capPath,
		Header: capture.Header{Tool: "test", Transport: tap.Stdio}})
	if err != nil {
		t.Fatal(err)
	}
	s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}),
		Sink: o.Sink(), Recorder: o.Recorder(), Conn: "stdio:1"})
	s.Stream("stdio:1", tap.FromBackend, time.Now(), []byte("banner\n"))
	s.Close()
	if err := o.Close(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	sum := o.Summary(3, s)
	if sum.Levels.Error == 0 || sum.NotAudited != 3 {
		t.Errorf("summary %+v: want the STDIO-1 error and 3 frames not audited", sum)
	}
	var notChecked []string
	for _, np := range sum.NotPossible {
		notChecked = append(notChecked, np.Check)
	}
	if got := strings.Join(notChecked, " "); got != "STDIO-2 STDIO-3 BASE-5 CORR-3" {
		t.Errorf("not checked %q, want the catalogue's answer for a bare stdio link", got)
	}
	if !strings.Contains(strings.Join(sum.FindingsTo, "; "), "v.log") || !strings.Contains(strings.Join(sum.FindingsTo, "; "), "--console") {
		t.Errorf("findings to %v", sum.FindingsTo)
	}
	if !strings.Contains(console.String(), "STDIO-1") {
		t.Errorf("console %q lacks the finding", console.String())
	}
	for _, p := range []string{logPath, capPath} {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte("banner")) && !bytes.Contains(b, []byte("STDIO-1")) {
			t.Errorf("%s: %v %q", p, err, b)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
	if err := o.Close(time.Now()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestOutputOpenFailures checks that an output that cannot be opened is an
// error, or with best effort one diagnostic line and no output.
func TestOutputOpenFailures(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "f")
	if _, err := Open(Config{Log: bad}); err == nil {
		t.Error("a log in a missing directory opened")
	}
	if _, err := Open(Config{Capture: bad}); err == nil || !strings.Contains(err.Error(), "cannot open capture") {
		t.Errorf("a capture in a missing directory: %v", err)
	}
	var diag bytes.Buffer
	o, err := Open(Config{Name: "test", Diag: &diag, Log: bad, LogBestEffort: true, Capture: bad, CaptureBestEffort: true})
	if err != nil {
		t.Fatalf("best effort: %v", err)
	}
	if o.Recorder() != nil {
		t.Error("a capture that could not be created records")
	}
	if !strings.Contains(diag.String(), "cannot open the capture") {
		t.Errorf("diag %q does not say the capture failed", diag.String())
	}
	if err := o.Close(time.Now()); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestReportsOfARun opens a JUnit and a text report, feeds a session
// through the run, and checks that the files are 0600 and hold the
// finding, and that an output that is an input (a hard link to it) is
// refused.
func TestReportsOfARun(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "r.xml")
	var stdout bytes.Buffer
	rs, err := OpenReports(ReportsConfig{Specs: []ReportSpec{{Format: "junit", File: junit}, {Format: "text"}}, Stdout: &stdout,
		Baseline: filepath.Join(dir, "missing.json"), FailOn: tap.Error})
	if err != nil {
		t.Fatal(err)
	}
	run := rs.Run()
	run.StartInput("in.jsonl")
	s := tap.NewSession(run.SessionConfig(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{})}, nil))
	s.Stream("", tap.FromBackend, time.Time{}, []byte("banner\n"))
	s.Close()
	run.Closed(s)
	end, err := rs.Finish()
	if err != nil || !end.Failing() {
		t.Fatalf("Finish: %v, failing %v; want a failing run (STDIO-1)", err, end != nil && end.Failing())
	}
	if len(rs.Classic()) != 1 || rs.Classic()[0].Format != "text" {
		t.Errorf("classic reports %+v", rs.Classic())
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(junit)
	if !bytes.Contains(b, []byte("STDIO-1")) {
		t.Errorf("JUnit lacks the finding: %s", b)
	}
	if fi, _ := os.Stat(junit); fi.Mode().Perm() != 0o600 {
		t.Errorf("JUnit mode %v", fi.Mode().Perm())
	}
	alias := filepath.Join(dir, "alias")
	if err := os.Link(junit, alias); err != nil {
		t.Skip(err)
	}
	if err := RefuseInputs([][2]string{{"--report junit=", alias}}, []string{junit}); err == nil {
		t.Error("an output that is an input (hard link) was not refused")
	}
	if err := RefuseInputs([][2]string{{"--report junit=", filepath.Join(dir, "other.xml")}}, []string{junit}); err != nil {
		t.Errorf("another file refused: %v", err)
	}
}

// Two links sharing one console (the routes of one `ahp-tap http`): with
// ConsoleLink each line names its link; the log keeps the finding as the
// session reported it.
func TestConsoleLinkNamesTheLink(t *testing.T) {
	dir := t.TempDir()
	var console bytes.Buffer
	f := tap.Finding{Check: "BASE-1", Level: tap.Error, Message: "bad", Conn: "http-conn:1", Seq: 2, Dir: tap.FromHarness}
	for _, link := range []string{"com.example.a", ""} {
		logPath := filepath.Join(dir, link+"v.log")
		o, err := Open(Config{Name: "test", Console: &console, ConsoleLink: link, Log: logPath})
		if err != nil {
			t.Fatal(err)
		}
		o.Sink().Write(f)
		if err := o.Close(time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(logPath); !bytes.Contains(b, []byte(`"conn":"http-conn:1"`)) || bytes.Contains(b, []byte("com.example.a")) {
			t.Errorf("link %q: log %s", link, b)
		}
	}
	lines := strings.Split(strings.TrimSpace(console.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "com.example.a http-conn:1 #2") || strings.Contains(lines[1], "com.example.a") {
		t.Errorf("console lines %q: want the first to name link com.example.a, the second not", lines)
	}
}

// TestOutputExportsAllSignals: with an OTLP exporter and a metrics
// registry in the Config, a session given o.Sink and o.Watcher sends its
// finding as a log record on its exchange's span, the span, and the
// registry's families; without an exporter there is no watcher.
func TestOutputExportsAllSignals(t *testing.T) {
	rc := otlptest.NewReceiver(t, false)
	x, err := otlpexport.New(otlpexport.Config{Endpoint: rc.URL})
	if err != nil {
		t.Fatal(err)
	}
	traffic := tapmetrics.NewTraffic()
	o, err := Open(Config{Name: "test", OTLP: x, OTLPClose: 5 * time.Second, Sinks: []tap.Sink{traffic.Sink()}, Metrics: traffic.Gatherer()})
	if err != nil {
		t.Fatal(err)
	}
	if o.Watcher() == nil {
		t.Fatal("Watcher() is nil with an OTLP exporter")
	}
	s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}),
		Sink: o.Sink(), Conn: "stdio:1", Watch: o.Watcher()})
	now := time.Now()
	s.Stream("stdio:1", tap.FromHarness, now, []byte(`{"jsonrpc":"2.0","id":"r1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"r1","type":"tool.before"}}}`+"\n"))
	s.Stream("stdio:1", tap.FromBackend, now.Add(time.Millisecond), []byte(`{"jsonrpc":"2.0","id":"r1","result":{"protocolVersion":"1900","effects":[]}}`+"\n"))
	s.Close()
	if err := o.Close(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	spans := rc.Spans()
	if len(spans) != 1 {
		t.Fatalf("received %d spans, want 1", len(spans))
	}
	joined := 0
	for _, r := range rc.Records() {
		if string(r.SpanId) == string(spans[0].SpanId) {
			joined++
		}
	}
	if joined == 0 || len(rc.Records()) == 0 {
		t.Errorf("%d of %d log records on the exchange's span, want some", joined, len(rc.Records()))
	}
	if rc.Metrics()["ahp_tap_findings_total"] == nil {
		t.Errorf("metrics %v lack ahp_tap_findings_total", rc.Metrics())
	}
	plain, err := Open(Config{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Watcher() != nil {
		t.Error("Watcher() is not nil without an OTLP exporter")
	}
	plain.Close(time.Now())
}

// TestOutputPlainLinesAndTraffic checks the mock peers' way out: each
// finding one plain line with the prefix and credentials redacted, none
// for a link without findings; and the traffic metrics counting the frames
// recorded through SessionConfig, with the watcher only when there is one.
func TestOutputPlainLinesAndTraffic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  int // plain lines
	}{
		{"violating", []string{"banner s3cret\n"}, 1},
		{"conforming", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plain bytes.Buffer
			traffic := tapmetrics.NewTraffic()
			o, err := Open(Config{Name: "mock backend", Plain: &plain, PlainPrefix: "ahp-tap mock backend ▸ ",
				Redact: func(s string) string { return strings.ReplaceAll(s, "s3cret", "[REDACTED]") }, Traffic: traffic})
			if err != nil {
				t.Fatal(err)
			}
			sc := o.SessionConfig(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}), Conn: "stdio:1"})
			if sc.Sink == nil || sc.Recorder == nil || sc.Watch == nil {
				t.Fatalf("SessionConfig left the way out empty: %+v", sc)
			}
			s := tap.NewSession(sc)
			for _, l := range tc.lines {
				s.Stream("stdio:1", tap.FromBackend, time.Now(), []byte(l))
			}
			s.Close()
			if err := o.Close(time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(plain.String(), "\n"), "\n")
			if plain.Len() == 0 {
				got = nil
			}
			if len(got) != tc.want {
				t.Fatalf("plain lines %q, want %d", got, tc.want)
			}
			for _, l := range got {
				if !strings.HasPrefix(l, "ahp-tap mock backend ▸ ") || !strings.Contains(l, "STDIO-1") || strings.Contains(l, "s3cret") {
					t.Errorf("plain line %q: want the prefix, STDIO-1 and no credential", l)
				}
			}
			if lc := o.Levels(); lc.Total() != tc.want {
				t.Errorf("levels %+v, want %d findings", lc, tc.want)
			}
			rec := httptest.NewRecorder()
			traffic.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			wantFrames := fmt.Sprintf("ahp_tap_frames_audited_total{direction=\"backend\"} %d", len(tc.lines))
			if !strings.Contains(rec.Body.String(), wantFrames) {
				t.Errorf("metrics lack %q", wantFrames)
			}
		})
	}
	o, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := o.SessionConfig(tap.SessionConfig{}); sc.Watch != nil || sc.Recorder != nil {
		t.Errorf("an output without capture, traffic or conduct gives watcher %v, recorder %v", sc.Watch, sc.Recorder)
	}
}
