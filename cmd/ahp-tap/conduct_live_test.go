package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/conduct/live"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

var ruleField = regexp.MustCompile(`"rule":"(COND-[^"]*)"`)

// Live conduct: the example harness dispatches to three stdio backends
// wrapped with `wrap --conduct` (persistent and per_event); every tap's
// audit feeds one conduct timeline, whose log has the same conduct
// findings as the replay of the captures: none for conforming dispatch,
// the fault's check for each fault.
func TestConductLive(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	for _, tc := range []struct{ fault, want string }{
		{"none", ""}, {"out-of-order", "COND-1"}, {"continue-after-deny", "COND-2"}, {"fail-open-stop", "COND-3"}, {"run-denied", "COND-8"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			conductLive(t, tc.fault, tc.want, nil)
		})
	}
}

// TestConductLiveInProcessAudit is TestConductLive with every tap
// auditing in its forwarding process (--audit=complete): its auditor, not
// an audit process, tells the conduct server its clock.
func TestConductLiveInProcessAudit(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	for _, tc := range []struct{ fault, want string }{{"none", ""}, {"out-of-order", "COND-1"}} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			conductLive(t, tc.fault, tc.want, []string{"--audit=complete"})
		})
	}
}

// conductLive runs the example harness with fault through taps wrapped
// with `wrap --conduct`, each tap given tapFlags too, and checks the live
// conduct findings against the replay's and against want (their checks,
// in order of first finding).
func conductLive(t *testing.T, fault, want string, tapFlags []string) {
	t.Helper()
	hooks := []conductHook{
		{"com.example.a", "persistent", "slow", "fail-closed", false},
		{"com.example.b", "per_event", "error", "fail-open", false},
		{"com.example.c", "persistent", "conforming", "fail-closed", true},
	}
	tapped, taps := conductRegistration(t, hooks...)
	// Wrap again, with --conduct.
	in := filepath.Join(filepath.Dir(tapped), "hooks.json")
	if r := runTap(t, "", "wrap", "--conduct", "--dir", taps, "--tap", tapBinary, "-o", tapped, in); r.code != 0 {
		t.Fatalf("wrap --conduct: %s", r.stderr)
	}
	if len(tapFlags) > 0 {
		addTapFlags(t, tapped, tapFlags)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tapBinary, "example-harness", "--registration", tapped, "--fault", fault)
	cmd.Env = append(os.Environ(), live.IdleEnv+"=300ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("example-harness: %v\n%s", err, stderr.String())
	}
	p := live.PathsFor(filepath.Join(taps, "conduct"))
	liveRules := waitConductServer(t, filepath.Join(taps, "conduct"))
	replayRules, _, _ := replayConduct(t, taps)
	slices.Sort(liveRules)
	slices.Sort(replayRules)
	if strings.Join(liveRules, " ") != strings.Join(replayRules, " ") {
		t.Errorf("--fault %s: live %v, replay %v", fault, liveRules, replayRules)
	}
	if condChecks(liveRules) != want {
		t.Errorf("--fault %s: live conduct findings %v, want %q\n%s", fault, liveRules, want, stderr.String())
	}
	if errs, _ := os.ReadFile(p.Err); len(errs) > 0 {
		t.Errorf("the conduct server's error file: %s", errs)
	}
}

// addTapFlags puts flags after the `stdio` of every stdio tap in the
// wrapped registration at path.
func addTapFlags(t *testing.T, path string, flags []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]any
	if err := json.Unmarshal(data, &reg); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range reg["hooks"].([]any) {
		tr := h.(map[string]any)["transport"].(map[string]any)
		args, _ := tr["args"].([]any)
		if tr["type"] != "stdio" || len(args) == 0 || args[0] != "stdio" {
			continue
		}
		rest := append([]any{"stdio"}, anySlice(flags)...)
		tr["args"] = append(rest, args[1:]...)
		n++
	}
	if n == 0 {
		t.Fatalf("no stdio tap in %s", data)
	}
	if data, err = json.Marshal(reg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// waitConductServer waits until the conduct server of dir has ended (it
// judges every event left when it ends) and returns the rules of its
// findings.
func waitConductServer(t *testing.T, dir string) []string {
	t.Helper()
	p := live.PathsFor(dir)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		_, errPid := os.Stat(p.Pid)
		_, errStarted := os.Stat(p.Started)
		if os.IsNotExist(errPid) && errStarted == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the conduct server did not end; %s: %v, %s: %v", p.Pid, errPid, p.Started, errStarted)
		}
	}
	logData, _ := os.ReadFile(p.Log)
	var rules []string
	for _, m := range ruleField.FindAllStringSubmatch(string(logData), -1) {
		rules = append(rules, m[1])
	}
	return rules
}

// --conduct places a link by its hook: without --registration and --hook
// it is a usage error (exit 2, one line), for stdio and http alike.
func TestConductFlagNeedsHook(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"stdio", "--conduct", dir, "--", "true"},
		{"http", "--conduct", dir, "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0"},
	} {
		r := runTap(t, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--conduct needs --registration and --hook") {
			t.Errorf("ahp-tap %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	reg := writeFile(t, "hooks.json", twoHooks)
	if r := runTap(t, "", "stdio", "--conduct", dir, "--registration", reg, "--hook", "com.example.a", "--", "true"); r.code != 0 {
		t.Errorf("stdio --conduct with a hook: exit %d, %s", r.code, r.stderr)
	}
	// No event, no fact: no conduct server was started.
	if _, err := os.Stat(live.PathsFor(dir).Started); !os.IsNotExist(err) {
		t.Errorf("a conduct server started for a link that carried no event: %v", err)
	}
}
