package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/capture"
)

// exampleLines returns the raw bytes of the example capture's frames with
// the given sequence numbers, each ended by eol: a conforming NDJSON stream.
func exampleLines(t *testing.T, eol string, seqs ...uint64) string {
	t.Helper()
	f, err := os.Open(exampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	items, err := capture.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, seq := range seqs {
		for _, it := range items {
			if it.Frame != nil && it.Frame.Seq == seq {
				b.Write(it.Frame.Raw)
				b.WriteString(eol)
			}
		}
	}
	return b.String()
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// Inputs are recognised by content, the same way for check and replay
// (issue 15 item 4).
func TestInputKinds(t *testing.T) {
	t.Parallel()
	capData, err := os.ReadFile(exampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	capPlain := write("session.capture", capData)
	capGz := write("session.capture.gz", gzipped(t, capData))
	stream := write("stream.txt", []byte(exampleLines(t, "\n", 1, 2)))
	violations := write("violations.log", []byte(`{"level":"error","time":"2026-12-02T09:31:59Z","check":"BASE-2","requirement":"AHP-VER-001","rule":"BASE-2/version","pointer":"","message":"m"}`+"\n"))
	binary := write("blob.bin", []byte{0, 1, 2, 3, 0xff})

	for _, cmd := range []string{"check", "replay"} {
		// A capture, plain or gzip: its findings (the example's BASE-2),
		// not "unexpected data after the JSON value".
		for _, p := range []string{capPlain, capGz} {
			r := runTap(t, "", cmd, p)
			if r.code != 1 || !strings.Contains(r.stdout, "BASE-2") || strings.Contains(r.stdout, "unexpected data") {
				t.Errorf("%s %s: exit %d, stdout %q", cmd, p, r.code, r.stdout)
			}
			kind := "(capture)"
			if strings.HasSuffix(p, ".gz") {
				kind = "(capture, gzip)"
			}
			if !strings.Contains(r.stdout, kind+": 8 frames audited") {
				t.Errorf("%s %s: summary does not say %s with 8 frames: %q", cmd, p, kind, r.stdout)
			}
		}
		// A stream named .txt is still a stream.
		if r := runTap(t, "", cmd, stream); r.code != 0 || !strings.Contains(r.stdout, "(stream): 2 frames audited") {
			t.Errorf("%s stream.txt: exit %d, stdout %q stderr %q", cmd, r.code, r.stdout, r.stderr)
		}
		// A stream with a line that is not UTF-8 is traffic, not binary data.
		badLine := write("bad-utf8.jsonl", []byte(exampleLines(t, "\n", 1)+"{\"a\":\"\xff\xfe\"}\n"))
		if r := runTap(t, "", cmd, badLine); r.code != 1 || !strings.Contains(r.stdout, "BASE-1") {
			t.Errorf("%s of a stream with a non-UTF-8 line: exit %d, stdout %q, stderr %q", cmd, r.code, r.stdout, r.stderr)
		}
		// Not traffic: refused with a clear reason, no finding invented.
		for _, p := range []string{violations, binary} {
			r := runTap(t, "", cmd, p)
			if r.code != 2 || strings.Contains(r.stdout, "#1") {
				t.Errorf("%s %s: exit %d, stdout %q; want 2 and no finding", cmd, p, r.code, r.stdout)
			}
			want := "violation log"
			if p == binary {
				want = "not text"
			}
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s %s: stderr %q does not say %q", cmd, p, r.stderr, want)
			}
		}
	}
}

// An input with no frame is an error unless --allow-empty; every summary
// says how many frames each input had (issue 15 item 3).
func TestEmptyInputs(t *testing.T) {
	t.Parallel()
	capData, err := os.ReadFile(exampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := bytes.Cut(capData, []byte("\n"))
	empty := writeFile(t, "empty.jsonl", "")
	blank := writeFile(t, "blank.json", "\n  \n")
	headerOnly := writeFile(t, "header.capture", string(header)+"\n")
	for _, cmd := range []string{"check", "replay"} {
		for _, p := range []string{empty, blank, headerOnly} {
			r := runTap(t, "", cmd, p)
			if r.code != 2 || !strings.Contains(r.stderr, filepath.Base(p)) || !strings.Contains(r.stdout, "0 frames audited") ||
				!strings.Contains(r.stdout, "summary: 0 sources checked (1 not checked)") {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want 2, the file named, 0 frames", cmd, p, r.code, r.stdout, r.stderr)
			}
			if r := runTap(t, "", cmd, "--allow-empty", p); r.code != 0 {
				t.Errorf("%s --allow-empty %s: exit %d, stderr %q", cmd, p, r.code, r.stderr)
			}
		}
	}
}

// A damaged record is reported with its file and line and skipped; the
// other inputs are still checked; the exit code says both (issue 15 item 5).
func TestDamagedRecordSkipped(t *testing.T) {
	t.Parallel()
	capData, err := os.ReadFile(exampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(capData), "\n")
	lines[3] = "{\"type\":\"frame\",\"raw\":\n" // line 4: cut short
	damaged := writeFile(t, "damaged.capture", strings.Join(lines, ""))
	good := writeFile(t, "good.capture", string(capData))
	r := runTap(t, "", "replay", damaged, good)
	if r.code != 3 {
		t.Errorf("exit %d, want 3 (findings and a damaged input)", r.code)
	}
	if !strings.Contains(r.stderr, "damaged.capture:4: damaged record skipped") {
		t.Errorf("stderr %q does not name the file and line", r.stderr)
	}
	// Both files' findings are there: the damaged one's from its other lines.
	for _, name := range []string{"damaged.capture:", "good.capture:"} {
		if !strings.Contains(r.stdout, name) || !strings.Contains(r.stdout, "BASE-2") {
			t.Errorf("stdout lacks findings of %s: %q", name, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "1 damaged record skipped") {
		t.Errorf("summary does not count the damaged record: %q", r.stdout)
	}
	// A missing file is said and the others are still checked.
	for _, cmd := range []string{"check", "replay"} {
		r := runTap(t, "", cmd, "/no/such/file.capture", good)
		if r.code != 3 || !strings.Contains(r.stderr, "/no/such/file.capture: open") || !strings.Contains(r.stdout, "good.capture:") {
			t.Errorf("%s with a missing file: exit %d, stdout %q, stderr %q", cmd, r.code, r.stdout, r.stderr)
		}
	}
	// Without findings at --fail-on, the damaged input alone is exit 2.
	if r := runTap(t, "", "replay", "--fail-on", "never", damaged, good); r.code != 2 {
		t.Errorf("--fail-on never: exit %d, want 2", r.code)
	}
}

// A JSON report of a long capture says how many exchange records it left
// out instead of silently listing only the last ones (issue 15 item 2).
func TestJSONReportSaysExchangesOmitted(t *testing.T) {
	t.Parallel()
	const n = 5000
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`+"\n", i)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"draft"}}`+"\n", i)
	}
	p := writeFile(t, "long.jsonl", b.String())
	r := runTap(t, "", "replay", "--format", "json", "--fail-on", "never", p)
	var doc struct {
		Exchanges []json.RawMessage
		Summary   struct{ ExchangesOmitted int }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("exit %d: %v\n%s", r.code, err, r.stderr)
	}
	if len(doc.Exchanges) == n {
		return // every exchange listed: nothing to say
	}
	if got := len(doc.Exchanges) + doc.Summary.ExchangesOmitted; got != n {
		t.Errorf("%d exchanges listed + %d said omitted = %d, want %d", len(doc.Exchanges), doc.Summary.ExchangesOmitted, got, n)
	}
	if !strings.Contains(r.stdout, `"exchangesOmitted": `) || !strings.Contains(r.stdout, `"exchangesOmittedReason": "to keep memory bounded`) {
		t.Errorf("the JSON report does not say exchanges were left out")
	}
}
