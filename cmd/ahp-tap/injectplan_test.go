package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInjectPlanFile: `ahp-tap stdio --inject-plan FILE` injects each
// named scenario's fault between the example harness and backend, says
// the scenario names in its banner, and records them in the capture's
// injected notes; a plan it cannot take (a symbolic link, too big, a bad
// SPEC, not a plan) is one line on stderr and exit 2, before the backend
// starts.
func TestInjectPlanFile(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(`{"scenarios":[{"name":"npm-error","inject":"error=-32000,id=evt_demo_5"},{"name":"never","inject":"drop,id=nothing"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	capPath := filepath.Join(dir, "s.capture")
	r := runTap(t, "", "example-harness", "--timeout", "1s", "--", tapBinary, "stdio", "--capture", capPath,
		"--inject-plan", plan, "--", tapBinary, "example-backend")
	if !strings.Contains(r.stderr, "npm-error: error=-32000,id=evt_demo_5; never: drop,id=nothing") {
		t.Errorf("the banner does not name the scenarios:\n%s", r.stderr)
	}
	if got := harnessSaid(t, r.stderr, "npm test"); !strings.Contains(got, "operational_failure: JSON-RPC error -32000") {
		t.Errorf("for the planned request the harness said %q", got)
	}
	if got := harnessSaid(t, r.stderr, "git push"); !strings.Contains(got, "explicit_deny") {
		t.Errorf("a request no scenario chose was altered: %q", got)
	}
	capText, err := os.ReadFile(capPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(capText), `"scenario":"npm-error"`); n != 2 { // injected, swallowed
		t.Errorf("the capture names scenario npm-error in %d notes, want 2 (injected, swallowed)", n)
	}
	if strings.Contains(string(capText), `"scenario":"never"`) {
		t.Errorf("the capture names a scenario that selected nothing")
	}

	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, []byte(`{"scenarios":[{"name":"a","inject":"drop"}]}`+strings.Repeat(" ", 1<<20)), 0o600)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(plan, link); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"scenarios":[{"name":"a","inject":"status=503"}]}`), 0o600)
	notPlan := filepath.Join(dir, "list.json")
	os.WriteFile(notPlan, []byte(`[{"name":"a","inject":"drop"}]`), 0o600)
	for file, want := range map[string]string{
		big:                          "larger than 1048576 bytes",
		link:                         "is a symbolic link",
		bad:                          `scenario "a": --inject "status=503": status is an HTTP fault`,
		notPlan:                      "not a plan",
		filepath.Join(dir, "absent"): "no such file",
	} {
		r := runTap(t, "", "stdio", "--inject-plan", file, "--", tapBinary, "example-backend")
		if r.code != 2 || !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
			t.Errorf("--inject-plan %s: exit %d, stderr %q; want exit 2 and a line with %q", filepath.Base(file), r.code, r.stderr, want)
		}
	}
}

// TestInjectPlanSummary: with --inject-plan and --summary, the tap's
// summary says per scenario how many faults it injected, how often the
// harness re-sent a request a fault hit, and the link's verdict on those
// requests: a retry within the deadline passes, one after it is BASE-6.
func TestInjectPlanSummary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ fault, want, replay string }{
		{"retry", "scenario drop-3: fault injected 2 times → the harness re-sent the request 1 time → verdict on this link: pass", "verdict: pass"},
		{"retry-late", "scenario drop-3: fault injected 2 times → the harness re-sent the request 1 time → verdict on this link: BASE-6 ×1", "verdict: COND-10/retry-late"},
		{"none", "scenario drop-3: fault injected 1 time → the harness did not re-send the request → verdict on this link: pass", "verdict: pass"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			dir := t.TempDir()
			plan := filepath.Join(dir, "plan.json")
			os.WriteFile(plan, []byte(`{"scenarios":[{"name":"drop-3","inject":"drop,id=evt_conduct_3"},{"name":"unused","inject":"error,id=nothing"}]}`), 0o600)
			reg := filepath.Join(dir, "hooks.json")
			capPath := filepath.Join(dir, "a.capture")
			args, _ := json.Marshal([]string{"stdio", "--registration", reg, "--hook", "com.example.a", "--summary", "--inject-plan", plan, "--capture", capPath,
				"--", tapBinary, "example-backend"})
			doc := `{"protocolVersion":"draft","hooks":[{"id":"com.example.a","transport":{"type":"stdio","command":"` + tapBinary + `","args":` + string(args) +
				`,"lifecycle":"persistent"},"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":2000,"failurePolicy":"fail-open","content":{"default":"body"}}]}]}`
			os.WriteFile(reg, []byte(doc), 0o600)
			said := runConductHarness(t, reg, c.fault)
			if !strings.Contains(said, c.want) {
				t.Errorf("--fault %s: the summary lacks %q:\n%s", c.fault, c.want, said)
			}
			if !strings.Contains(said, "scenario unused: fault never injected (no request matched)") {
				t.Errorf("the summary does not say scenario unused never applied:\n%s", said)
			}
			// replay --conduct of the capture: the conduct verdict per
			// scenario, with what the harness did (the event's chain).
			r := runTap(t, "", "replay", "--conduct", "on", capPath)
			line := ""
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(l, "scenario drop-3: ") {
					line = l
				}
			}
			if !strings.Contains(line, "(events evt_conduct_3) → the harness: event tool.before evt_conduct_3: +0s com.example.a intercept") ||
				!strings.HasSuffix(line, c.replay) {
				t.Errorf("--fault %s: replay's scenario line %q, want the event's chain and %q\n%s", c.fault, line, c.replay, r.stdout)
			}
		})
	}
}
