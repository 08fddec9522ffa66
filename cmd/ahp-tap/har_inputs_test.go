package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mitmHAR is a HAR mitmproxy wrote (har/testdata/make.sh): 7 AHP
// exchanges, a GET and a form POST.
const mitmHAR = "../../har/testdata/mitmproxy.har"

// editHAR writes a copy of mitmHAR with edit applied to its entries.
func editHAR(t *testing.T, name string, edit func(entries []any) []any) string {
	t.Helper()
	data, err := os.ReadFile(mitmHAR)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	log := h["log"].(map[string]any)
	log["entries"] = edit(log["entries"].([]any))
	out, _ := json.Marshal(h)
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// dropBodies removes the response text of the first n AHP entries,
// keeping their size, as a browser saving a HAR without content does.
func dropBodies(n int) func([]any) []any {
	return func(entries []any) []any {
		for _, e := range entries {
			req := e.(map[string]any)["request"].(map[string]any)
			if n == 0 || req["method"] != "POST" || !strings.Contains(req["url"].(string), "agent-hooks") {
				continue
			}
			c := e.(map[string]any)["response"].(map[string]any)["content"].(map[string]any)
			delete(c, "text")
			c["size"] = 120
			n--
		}
		return entries
	}
}

// A HAR saved without response bodies (content.text absent, size > 0) is
// no protocol error: the exchanges are not audited and one TAP-1 fact
// says "body not recorded" (issue 21 item 6: it gave HTTP-2 errors and
// exit 1). The other exchanges are still audited.
func TestHARBodyNotRecorded(t *testing.T) {
	t.Parallel()
	mixed := editHAR(t, "mixed.har", dropBodies(2))
	r := runTap(t, "", "replay", "--format", "json", "--fail-on", "warn", mixed)
	var rep struct {
		Findings []struct{ Check, Message, Level string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("replay: exit %d, %v: %s %s", r.code, err, r.stdout, r.stderr)
	}
	var tap1 int
	for _, f := range rep.Findings {
		if f.Check == "HTTP-2" {
			t.Errorf("HTTP-2 on a body the HAR does not hold: %s", f.Message)
		}
		if f.Check == "TAP-1" && strings.Contains(f.Message, "body not recorded: 2 AHP exchanges") {
			tap1++
		}
	}
	if tap1 != 1 {
		t.Errorf("%d TAP-1 'body not recorded' findings, want 1: %+v", tap1, rep.Findings)
	}
	// The recorded exchanges are still audited: the HAR's BASE-2.
	if !strings.Contains(r.stdout, `"BASE-2"`) {
		t.Errorf("the recorded exchanges were not audited: %s", r.stdout)
	}
	if !strings.Contains(r.stderr, "5 AHP exchanges audited, 2 not audited (body not recorded)") {
		t.Errorf("stderr %q", r.stderr)
	}

	// No body recorded at all: nothing to audit, said in HAR words, exit 2.
	none := editHAR(t, "none.har", dropBodies(100))
	r = runTap(t, "", "replay", none)
	if r.code != 2 || strings.Contains(r.stdout, "HTTP-2") || !strings.Contains(r.stderr, "7 AHP exchanges have no body recorded") {
		t.Errorf("replay of a HAR without bodies: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// The HAR as recorded: no TAP-1.
	r = runTap(t, "", "replay", mitmHAR)
	if strings.Contains(r.stdout, "TAP-1") || !strings.Contains(r.stdout, "BASE-2") {
		t.Errorf("replay of the whole HAR: exit %d\n%s", r.code, r.stdout)
	}
}

// A HAR without AHP traffic says so in HAR words, not capture words.
func TestHARWithoutAHPEntry(t *testing.T) {
	t.Parallel()
	p := editHAR(t, "get.har", func(entries []any) []any {
		var out []any
		for _, e := range entries {
			if e.(map[string]any)["request"].(map[string]any)["method"] == "GET" {
				out = append(out, e)
			}
		}
		return out
	})
	r := runTap(t, "", "replay", p)
	if r.code != 2 || !strings.Contains(r.stderr, "the HAR has 1 entry and no AHP exchange among them") || strings.Contains(r.stderr, "capture") {
		t.Errorf("replay of a HAR without AHP traffic: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runTap(t, "", "replay", "--allow-empty", p); r.code != 0 {
		t.Errorf("--allow-empty: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A JSON document starting with a UTF-8 byte order mark is read as
// without it (RFC 8259 §8.1) wherever ahp-tap reads one: a HAR, a
// registration (as input and as --registration), a capture, a message, a
// baseline, a violation log. None is audited as a stdio stream (issue 21
// item 6: STDIO-1 "\ufeff{").
func TestBOMDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bom := func(name, src string) string {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, append([]byte("\xef\xbb\xbf"), data...), 0o600)
		return p
	}
	plain := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	har := bom("b.har", mitmHAR)
	if r := runTap(t, "", "replay", har); !strings.Contains(r.stdout, "(har)") || !strings.Contains(r.stdout, "BASE-2") || strings.Contains(r.stdout, "STDIO-1") {
		t.Errorf("replay of a HAR with a BOM: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	capt := bom("b.capture", exampleCapture)
	want := runTap(t, "", "replay", exampleCapture)
	got := runTap(t, "", "replay", capt)
	if got.code != want.code || strings.Count(got.stdout, "\n") != strings.Count(want.stdout, "\n") || !strings.Contains(got.stdout, "(capture)") {
		t.Errorf("replay of a capture with a BOM: exit %d\n%s\nwant as without:\n%s", got.code, got.stdout, want.stdout)
	}
	msg := plain("m.json", "\xef\xbb\xbf"+`{"jsonrpc":"2.0","id":1,"method":"hooks/observe","params":{}}`)
	if r := runTap(t, "", "check", msg); !strings.Contains(r.stdout, "(message)") || strings.Contains(r.stdout, "STDIO-1") {
		t.Errorf("check of a message with a BOM: exit %d\n%s", r.code, r.stdout)
	}
	// A baseline written by an editor that adds a BOM.
	base := filepath.Join(dir, "base.json")
	if r := runTap(t, "", "replay", "--write-baseline", base, "--fail-on", "never", exampleCapture); r.code != 0 {
		t.Fatalf("--write-baseline: exit %d %s", r.code, r.stderr)
	}
	bbase := bom("bbase.json", base)
	if r := runTap(t, "", "replay", "--baseline", bbase, exampleCapture); r.code != 0 {
		t.Errorf("--baseline with a BOM: exit %d, stderr %q", r.code, r.stderr)
	}
	// A violation log: tail reads its first record.
	logPath := filepath.Join(dir, "v.log")
	if r := runTap(t, "", "replay", "--log", logPath, "--fail-on", "never", exampleCapture); r.code != 0 {
		t.Fatalf("replay --log: exit %d %s", r.code, r.stderr)
	}
	blog := bom("b.log", logPath)
	if r := runTap(t, "", "tail", blog); strings.Contains(r.stderr, "not a finding record") || strings.Count(r.stdout, "\n") != 5 {
		t.Errorf("tail of a log with a BOM: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	reg := filepath.Join(sharedAHP, "fixtures/draft/registration/portable.valid.json")
	if _, err := os.Stat(reg); err != nil {
		t.Skipf("no shared AHP fixtures: %v", err)
	}
	breg := bom("reg.json", reg)
	if r := runTap(t, "", "check", breg); r.code != 0 || !strings.Contains(r.stdout, "(registration)") {
		t.Errorf("check of a registration with a BOM: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runTap(t, "", "check", "--registration", breg, "--hook", "com.example.policy", msg); r.code == 2 || strings.Contains(r.stderr, "not JSON") {
		t.Errorf("--registration with a BOM: exit %d, stderr %q", r.code, r.stderr)
	}
}
