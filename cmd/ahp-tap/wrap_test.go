package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/examples"
)

// registrationCases are the upstream registration fixtures, by manifest id,
// with whether the manifest says they are valid.
func registrationCases(t *testing.T) map[string]struct {
	path  string
	valid bool
} {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedAHP, "fixtures/draft/manifest.json"))
	if err != nil {
		t.Skipf("no shared AHP corpus: %v", err)
	}
	var m struct {
		Cases []struct {
			ID, Path, Binding string
			ExpectedValid     bool
		}
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		path  string
		valid bool
	}{}
	for _, c := range m.Cases {
		if c.Binding == "registration-json" {
			out[c.ID] = struct {
				path  string
				valid bool
			}{filepath.Join(sharedAHP, c.Path), c.ExpectedValid}
		}
	}
	if len(out) == 0 {
		t.Fatal("the manifest lists no registration fixture")
	}
	return out
}

// TestWrapUnwrapFixtures wraps every upstream registration fixture with the
// binary: valid ones come back byte for byte through unwrap (and -o keeps
// the mode); invalid ones are refused with their findings, exit 1, and
// nothing written.
func TestWrapUnwrapFixtures(t *testing.T) {
	t.Parallel()
	for id, c := range registrationCases(t) {
		dir := t.TempDir()
		orig, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		in := filepath.Join(dir, "hooks.json")
		if err := os.WriteFile(in, orig, 0o640); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "hooks.tapped.json")
		r := runTap(t, "", "wrap", "--dir", filepath.Join(dir, "logs"), "--tap", "/usr/local/bin/ahp-tap", "-o", out, in)
		if !c.valid {
			if r.code != 1 || !strings.Contains(r.stderr, "BASE-5") || !strings.Contains(r.stderr, "not a valid registration") {
				t.Errorf("%s: wrap exit %d, stderr %q; want 1 and the BASE-5 findings", id, r.code, r.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s: wrap wrote %s for an invalid registration", id, out)
			}
			continue
		}
		if r.code != 0 {
			t.Fatalf("%s: wrap exit %d: %s", id, r.code, r.stderr)
		}
		wrapped, _ := os.ReadFile(out)
		if st, _ := os.Stat(out); st.Mode().Perm() != 0o640 {
			t.Errorf("%s: -o file mode %v, want the input's 0640", id, st.Mode().Perm())
		}
		if !strings.Contains(string(wrapped), `"/usr/local/bin/ahp-tap"`) || !strings.Contains(r.stderr, "wrapped") {
			t.Errorf("%s: nothing wrapped:\n%s\n%s", id, wrapped, r.stderr)
		}
		// The wrapped registration is itself valid.
		if v := runTap(t, "", "check", out); v.code != 0 {
			t.Errorf("%s: the wrapped registration does not check clean: %s", id, v.stdout)
		}
		// A second wrap says so and changes nothing.
		again := runTap(t, "", "wrap", "--dir", filepath.Join(dir, "logs"), "--tap", "/usr/local/bin/ahp-tap", out)
		if again.code != 0 || again.stdout != string(wrapped) || !strings.Contains(again.stderr, "already wrapped") {
			t.Errorf("%s: wrapping a wrapped registration: exit %d, changed %v, stderr %q", id, again.code, again.stdout != string(wrapped), again.stderr)
		}
		u := runTap(t, "", "unwrap", out)
		if u.code != 0 || u.stdout != string(orig) {
			t.Errorf("%s: unwrap exit %d; got\n%s\nwant\n%s", id, u.code, u.stdout, orig)
		}
	}
}

func TestWrapUsage(t *testing.T) {
	t.Parallel()
	reg := writeFile(t, "hooks.json", `{"protocolVersion":"draft","hooks":[]}`)
	for _, args := range [][]string{
		{"wrap", reg},                           // no --dir
		{"wrap", "--dir", t.TempDir()},          // no file
		{"wrap", "--dir", t.TempDir(), "-", ""}, // two args
		{"wrap", "--dir", t.TempDir(), "-"},     // stdin
		{"wrap", "--dir", t.TempDir(), "--tap", "ahp-tap", reg},
		{"wrap", "--dir", t.TempDir(), "-o", reg, reg},
		{"wrap", "--dir", t.TempDir(), "--listen-base", "70000", reg},
		{"unwrap", "/no/such/file"},
	} {
		if r := runTap(t, "", args...); r.code != 2 || r.stdout != "" {
			t.Errorf("ahp-tap %q: exit %d stdout %q, want 2 and nothing", args, r.code, r.stdout)
		}
	}
}

// TestWrappedRegistrationDrivesALiveSession wraps a registration whose stdio
// backend is the example backend, then plays the example harness against
// the wrapped entry exactly as a harness would start it (command and args
// from the registration, no shell): the session goes through, and the tap
// the registration now starts logs the backend's faults and captures the
// traffic, which replays to the same findings.
func TestWrappedRegistrationDrivesALiveSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := strings.Replace(examples.DemoRegistration, `"command": "ahp-tap"`, `"command": "`+tapBinary+`"`, 1)
	in := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(in, []byte(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "logs")
	r := runTap(t, "", "wrap", "--dir", logs, "--tap", tapBinary, in)
	if r.code != 0 {
		t.Fatalf("wrap: exit %d: %s", r.code, r.stderr)
	}
	var d struct {
		Hooks []struct {
			Transport struct {
				Command string
				Args    []string
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatal(err)
	}
	tr := d.Hooks[0].Transport
	harness := exec.Command(tapBinary, append([]string{"example-harness", "--", tr.Command}, tr.Args...)...)
	out, err := harness.CombinedOutput()
	if err != nil {
		t.Fatalf("example-harness through the wrapped entry: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "explicit_deny") {
		t.Errorf("the session did not go through the tap:\n%s", out)
	}
	log, err := os.ReadFile(filepath.Join(logs, examples.DemoHook+".violations.log"))
	if err != nil {
		t.Fatalf("the wrapped tap wrote no log: %v", err)
	}
	for _, want := range []string{`"check":"STDIO-1"`, `"check":"BASE-9"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("violation log lacks %s:\n%s", want, log)
		}
	}
	capture := filepath.Join(logs, examples.DemoHook+".capture")
	rp := runTap(t, "", "replay", "--format", "json", capture)
	if rp.code != 1 {
		t.Fatalf("replay of the wrapped tap's capture: exit %d, want 1: %s", rp.code, rp.stderr)
	}
	if got, want := checkCounts(t, []byte(rp.stdout)), logCounts(t, log); !equalCounts(got, want) {
		t.Errorf("replay findings %v, live log %v", got, want)
	}
}

// logCounts counts a violation log's findings by check.
func logCounts(t *testing.T, log []byte) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var f struct{ Check string }
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out[f.Check]++
	}
	return out
}

// checkCounts counts the findings of a --format json report by check.
func checkCounts(t *testing.T, report []byte) map[string]int {
	t.Helper()
	var rep struct {
		Findings []struct{ Check string }
	}
	if err := json.Unmarshal(report, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, report)
	}
	out := map[string]int{}
	for _, f := range rep.Findings {
		out[f.Check]++
	}
	return out
}

func equalCounts(a, b map[string]int) bool {
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

// TestWrapOutputFile: -o keeps an existing file's mode, replaces it whole,
// and refuses a symbolic link rather than write through it.
func TestWrapOutputFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(reg, []byte(examples.DemoRegistration), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tapped.json")
	if err := os.WriteFile(out, []byte(strings.Repeat("old ", 1000)), 0o604); err != nil {
		t.Fatal(err)
	}
	os.Chmod(out, 0o604)
	if r := runTap(t, "", "wrap", "--dir", dir, "-o", out, reg); r.code != 0 {
		t.Fatalf("wrap: exit %d: %s", r.code, r.stderr)
	}
	data, _ := os.ReadFile(out)
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o604 || strings.Contains(string(data), "old") || !strings.Contains(string(data), `"stdio"`) {
		t.Errorf("-o over an existing file: mode %v, content %q; want 0604 and the wrapped registration only", st.Mode().Perm(), data)
	}
	target := filepath.Join(dir, "target.json")
	os.WriteFile(target, []byte("keep"), 0o600)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if r := runTap(t, "", "wrap", "--dir", dir, "-o", link, reg); r.code != 2 {
		t.Errorf("-o a symbolic link: exit %d, want 2", r.code)
	}
	if data, _ := os.ReadFile(target); string(data) != "keep" {
		t.Errorf("wrap wrote through a symbolic link: %q", data)
	}
}

// TestWrappedPerEventBackendSharesState wraps a per_event backend and runs
// it as a per-event harness does: one process per event, one message in,
// stdin closed. The wrapped entry gives every process the same --state, so
// an event re-sent with other content in a second process is a BASE-6
// finding, which no single process could see.
func TestWrappedPerEventBackendSharesState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := strings.Replace(examples.DemoRegistration, `"command": "ahp-tap", "args": ["example-backend", "--mode", "demo"], "lifecycle": "persistent"`,
		`"command": "`+tapBinary+`", "args": ["example-backend"], "lifecycle": "per_event"`, 1)
	if reg == examples.DemoRegistration {
		t.Fatal("the demo registration changed; update this test")
	}
	in := filepath.Join(dir, "hooks.json")
	os.WriteFile(in, []byte(reg), 0o600)
	logs := filepath.Join(dir, "logs")
	r := runTap(t, "", "wrap", "--dir", logs, "--tap", tapBinary, in)
	if r.code != 0 {
		t.Fatalf("wrap: exit %d: %s", r.code, r.stderr)
	}
	var d struct {
		Hooks []struct {
			Transport struct {
				Command string
				Args    []string
			}
		}
	}
	json.Unmarshal([]byte(r.stdout), &d)
	tr := d.Hooks[0].Transport
	if !strings.Contains(strings.Join(tr.Args, " "), "--state "+filepath.Join(logs, examples.DemoHook+".state")) {
		t.Fatalf("wrapped per_event args %q lack --state", tr.Args)
	}
	event := func(command string) string {
		return `{"jsonrpc":"2.0","id":"evt_r1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"evt_r1","source":"urn:example:h","type":"tool.before","time":"2026-12-02T10:00:00Z","harness":{"name":"h","version":"1"},"session":{"id":"s1","cwd":"/w"},"tool":{"name":"Bash","kind":"shell","input":{"command":"` + command + `"},"origin":"native"},"call":{"id":"c1"},"path":"native"},"capabilities":{"effects":["deny"]}}}` + "\n"
	}
	for _, msg := range []string{event("ls"), event("rm -rf /")} {
		cmd := exec.Command(tr.Command, tr.Args...)
		cmd.Stdin = strings.NewReader(msg)
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), `"id":"evt_r1"`) {
			t.Fatalf("per-event process: %v, answered %q", err, out)
		}
	}
	log, _ := os.ReadFile(filepath.Join(logs, examples.DemoHook+".violations.log"))
	if logCounts(t, log)["BASE-6"] == 0 {
		t.Errorf("no BASE-6 for the event re-sent with other content across processes:\n%s", log)
	}
}
