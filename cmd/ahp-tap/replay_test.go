package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/replay"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

const exampleCapture = "testdata/example.capture.jsonl"

// exampleFindings are the findings docs/capture-format.md documents for the
// example capture: one per deliberate violation.
var exampleFindings = []struct {
	seq   uint64
	check string
}{
	{4, "BASE-2"},  // result.protocolVersion "2025-06"
	{4, "CORR-3"},  // answered after 900ms, the subscription allows 500ms
	{5, "STDIO-1"}, // a log line on the backend's stdout
	{7, "BASE-1"},  // bytes that are not UTF-8
	{8, "CORR-2"},  // evt-4 never answered before the backend exited
}

// TestReplayExampleCapture replays the hand-written capture: every
// documented finding whose check has rules is reported, and nothing else
// at warn or error.
func TestReplayExampleCapture(t *testing.T) {
	t.Parallel()
	r := runTap(t, "", "replay", "--format", "json", exampleCapture)
	var doc struct {
		Findings []struct {
			Seq   uint64
			Check string
			Level string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("replay --format json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	implemented := map[string]bool{}
	for _, ru := range rules.Default(rules.Options{}) {
		implemented[string(ru.Info().Check)] = true
	}
	got := map[[2]string]bool{}
	for _, f := range doc.Findings {
		key := [2]string{f.Check, itoa(f.Seq)}
		got[key] = true
		if f.Level == "info" {
			continue
		}
		documented := false
		for _, w := range exampleFindings {
			documented = documented || (w.check == f.Check && w.seq == f.Seq)
		}
		if !documented {
			t.Errorf("undocumented finding: #%d %s %s", f.Seq, f.Level, f.Check)
		}
	}
	for _, w := range exampleFindings {
		if implemented[w.check] && !got[[2]string{w.check, itoa(w.seq)}] {
			t.Errorf("missing documented finding #%d %s", w.seq, w.check)
		}
	}
	if r.code != 1 {
		t.Errorf("replay example: exit %d, want 1 (it has error findings)", r.code)
	}
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestReplayFailOn(t *testing.T) {
	t.Parallel()
	// A stream with only a warn-level fact and no error: CRLF endings.
	stream := writeFile(t, "ok.jsonl", exampleLines(t, "\r\n", 1, 2))
	for _, tc := range []struct {
		failOn string
		file   string
		want   int
	}{
		{"error", exampleCapture, 1},
		{"never", exampleCapture, 0},
		{"warn", exampleCapture, 1},
		{"error", stream, 0},
	} {
		if r := runTap(t, "", "replay", "--fail-on", tc.failOn, tc.file); r.code != tc.want {
			t.Errorf("replay --fail-on %s %s: exit %d, want %d (stderr %q)", tc.failOn, tc.file, r.code, tc.want, r.stderr)
		}
	}
}

func TestReplayLog(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "violations.log")
	r := runTap(t, "", "replay", "--log", logPath, "--fail-on", "never", exampleCapture)
	if r.code != 0 {
		t.Fatalf("replay --log: exit %d, stderr %q", r.code, r.stderr)
	}
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(logPath)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("log line 1 %q: %v", lines[0], err)
	}
	for _, k := range []string{"level", "time", "message", "check", "requirement", "rule", "pointer"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("log record has no %q: %s", k, lines[0])
		}
	}
	// More findings than the log's buffer: replay waits, nothing is dropped.
	many := writeFile(t, "many.jsonl", strings.Repeat("[1]\n", 10000))
	manyLog := filepath.Join(t.TempDir(), "many.log")
	if r := runTap(t, "", "replay", "--direction", "backend", "--log", manyLog, many); r.code != 1 {
		t.Errorf("replay many: exit %d, want 1", r.code)
	}
	if data, _ := os.ReadFile(manyLog); bytes.Count(data, []byte("\n")) != 10000 {
		t.Errorf("log of 10000 findings has %d lines", bytes.Count(data, []byte("\n")))
	}
	if r := runTap(t, "", "replay", "--log", filepath.Join(t.TempDir(), "no", "dir", "x.log"), exampleCapture); r.code != 2 {
		t.Errorf("replay --log into a missing dir: exit %d, want 2", r.code)
	}
}

func TestReplayPlainNDJSON(t *testing.T) {
	t.Parallel()
	valid := fixture(t, "stdio/intercept-request.valid.jsonl")
	// One side only: an unanswered request is no finding.
	r := runTap(t, "", "replay", "--direction", "harness", valid)
	if r.code != 0 {
		t.Errorf("replay --direction harness: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Without a registration or --timeout the summary says what was not checked.
	if !strings.Contains(r.stdout, "not checked: CORR-3") || !strings.Contains(r.stdout, "not checked: BASE-5") {
		t.Errorf("summary does not name the checks not possible:\n%s", r.stdout)
	}
	if r := runTap(t, "", "replay", "--direction", "harness", "--timeout", "1s", valid); strings.Contains(r.stdout, "not checked: CORR-3") {
		t.Errorf("with --timeout, CORR-3 is possible:\n%s", r.stdout)
	}
	bad := writeFile(t, "bad.jsonl", "[1,2]\n")
	if r := runTap(t, "", "replay", "--direction", "backend", bad); r.code != 1 || !strings.Contains(r.stdout, "BASE-1") {
		t.Errorf("replay batch: exit %d, stdout %q; want 1 and BASE-1", r.code, r.stdout)
	}
}

// TestReplayMatchesLive records a run through an Auditor into a capture,
// as the live taps do, and checks that replay reports exactly its findings.
func TestReplayMatchesLive(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(exampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	items, err := capture.Read(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	h := items[0].Header
	reg, _, _ := tap.ParseJSON(h.RegistrationDoc)
	cfg := tap.Config{Snapshot: h.Snapshot, Registration: reg, HookID: h.Hook, Lifecycle: h.Lifecycle, Transport: h.Transport}

	path := filepath.Join(t.TempDir(), "live.capture")
	w, err := capture.Create(path, capture.Header{Tool: "test", Snapshot: h.Snapshot, Transport: h.Transport, Conn: h.Conn,
		Hook: h.Hook, Lifecycle: h.Lifecycle, RegistrationDoc: h.RegistrationDoc})
	if err != nil {
		t.Fatal(err)
	}
	var live report.Collector
	aud := tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(rules.Options{}), Sink: &live, Recorder: w,
		RegistrationReported: true}).Audit(tap.AuditorConfig{})
	for _, it := range items[1:] {
		switch {
		case it.Frame != nil:
			it.Frame.Seq = 0 // numbered by the engine, as live
			aud.Submit(it.Frame)
		case it.Note != nil:
			aud.Note(*it.Note)
		}
	}
	aud.Close()
	w.Close()
	for _, f := range rules.RegistrationFindings(reg) {
		live.Write(f)
	}

	rdata, _ := os.ReadFile(path)
	rp := replay.Replayer{Config: tap.Config{Snapshot: tap.DefaultSnapshot}, Set: map[string]bool{}}
	replayed, err := rp.ReplayCapture(capture.NewReader(bytes.NewReader(rdata)))
	if err != nil {
		t.Fatal(err)
	}
	key := func(fs []tap.Finding) map[string]int {
		m := map[string]int{}
		for _, f := range fs {
			f.Time = time.Time{}
			b, _ := json.Marshal(f)
			m[string(b)]++
		}
		return m
	}
	lk, rk := key(live.Findings()), key(replayed)
	for k, n := range lk {
		if rk[k] != n {
			t.Errorf("live finding %s: %d times live, %d in replay", k, n, rk[k])
		}
	}
	for k, n := range rk {
		if lk[k] != n {
			t.Errorf("replayed finding %s: %d times in replay, %d live", k, n, lk[k])
		}
	}
}

func TestReplayStdin(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(exampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	fromFile := runTap(t, "", "replay", "--format", "json", exampleCapture)
	fromStdin := runTap(t, "\n"+string(data), "replay", "--format", "json", "-")
	// The input's size and digest differ by the blank line.
	digest := regexp.MustCompile(`"(bytes|sha256)": ("[0-9a-f]+"|[0-9]+)`)
	strip := func(s string) string {
		s = strings.ReplaceAll(s, `"source": "`+exampleCapture+`"`, `"source": "-"`)
		s = strings.ReplaceAll(s, `"name": "`+exampleCapture+`"`, `"name": "-"`)
		return digest.ReplaceAllString(s, `"$1": _`)
	}
	if fromStdin.code != fromFile.code || strip(fromFile.stdout) != strip(fromStdin.stdout) {
		t.Errorf("replay - (with a leading blank line) differs from replay FILE:\n%s\nvs\n%s", fromStdin.stdout, fromFile.stdout)
	}
	// Plain NDJSON on stdin, with a 5 MB line: read as a stream.
	big := `{"jsonrpc":"2.0","method":"hooks/observe","params":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}`
	if r := runTap(t, big+"\n[1]\n", "replay", "--direction", "harness", "-"); r.code != 1 || !strings.Contains(r.stdout, "#2 sent by harness: error BASE-1") {
		t.Errorf("replay - (NDJSON): exit %d, stdout %q; want 1 and a BASE-1 finding on line 2", r.code, r.stdout)
	}
}
