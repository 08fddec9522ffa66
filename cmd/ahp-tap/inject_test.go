package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/inject"
)

// injectedRun runs the example harness against the example backend behind
// `ahp-tap stdio --inject SPEC…` and returns the harness's stderr (what
// it made of each answer) and the capture's path.
func injectedRun(t *testing.T, lifecycle string, specs ...string) (harness, capPath string) {
	t.Helper()
	dir := t.TempDir()
	capPath = filepath.Join(dir, "s.capture")
	args := []string{"example-harness", "--timeout", "1s", "--lifecycle", lifecycle, "--", tapBinary, "stdio", "--lifecycle", lifecycle,
		"--capture", capPath, "--log", filepath.Join(dir, "v.log")}
	if lifecycle == "per_event" {
		args = append(args, "--state", filepath.Join(dir, "state"))
	}
	for _, s := range specs {
		args = append(args, "--inject", s)
	}
	args = append(args, "--", tapBinary, "example-backend")
	r := runTap(t, "", args...)
	if log, err := os.ReadFile(filepath.Join(dir, "v.log")); err == nil && len(log) > 0 {
		t.Errorf("the live tap reported findings with faults injected on a conforming backend:\n%s", log)
	}
	return r.stderr, capPath
}

// replayInjected replays capPath and returns the text summary and the
// JSON report's findings.
func replayInjected(t *testing.T, capPath string) (summary string, findings []string) {
	t.Helper()
	r := runTap(t, "", "replay", capPath)
	if r.code != 0 {
		t.Errorf("replay of the injected run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	j := runTap(t, "", "replay", "--format", "json", capPath)
	var doc struct {
		Findings []struct{ Check, Message string }
	}
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil {
		t.Fatalf("replay --format json: %v: %s", err, j.stdout)
	}
	for _, f := range doc.Findings {
		findings = append(findings, f.Check+": "+f.Message)
	}
	return r.stdout, findings
}

// harnessSaid is the harness's line about the step whose description
// contains step.
func harnessSaid(t *testing.T, stderr, step string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "harness: ") && strings.Contains(l, step) {
			return l
		}
	}
	t.Fatalf("the harness said nothing about %q:\n%s", step, stderr)
	return ""
}

// TestInjectStdioFaultsReachTheHarness: each fault, injected for one
// request (the `npm test` intercept, evt_demo_5) between a real backend
// and a real harness, is what the harness sees for that request, and only
// for it; the capture says faults were injected, and replays with no
// finding against the backend (and the same "faults injected" notice).
func TestInjectStdioFaultsReachTheHarness(t *testing.T) {
	cases := []struct {
		spec, want string
	}{
		{"error=-32000,id=evt_demo_5", "operational_failure: JSON-RPC error -32000"},
		{"drop,id=evt_demo_5", "operational_failure: no response before the deadline"},
		{"delay=3s,id=evt_demo_5", "operational_failure: no response before the deadline"},
		{"invalid-deny,id=evt_demo_5", "explicit_deny: injected by ahp-tap"}, // the example harness takes the deny: it does not validate effects
		{"unadvertised-effect,id=evt_demo_5", "operational_failure: unadvertised effect modify"},
		{"close,id=evt_demo_5", "operational_failure: the backend closed stdout"},
		{"partial,id=evt_demo_5", "operational_failure: the backend closed stdout"},
		{"crash,id=evt_demo_5", "operational_failure: the backend closed stdout"},
		{"malformed,id=evt_demo_5", "operational_failure: no response before the deadline"},
		{"banner,id=evt_demo_5", "no_effect"},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			stderr, capPath := injectedRun(t, "persistent", c.spec)
			if !strings.Contains(stderr, "ahp-tap stdio: "+inject.Notice) {
				t.Errorf("no banner on stderr:\n%s", stderr)
			}
			if got := harnessSaid(t, stderr, "npm test"); !strings.Contains(got, c.want) {
				t.Errorf("for the injected request the harness said %q, want %q", got, c.want)
			}
			if got := harnessSaid(t, stderr, "git push"); !strings.Contains(got, "explicit_deny: Blocked by the example policy") {
				t.Errorf("a request no selector chose was altered: %q", got)
			}
			if c.spec == "banner,id=evt_demo_5" && !strings.Contains(stderr, inject.BannerLine) {
				t.Errorf("the harness did not see the banner:\n%s", stderr)
			}
			capText, err := os.ReadFile(capPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.SplitN(string(capText), "\n", 2)[0], `"injected":"`+inject.Notice) {
				t.Errorf("the capture header does not say faults were injected")
			}
			if !strings.Contains(string(capText), `"kind":"injected"`) {
				t.Errorf("the capture has no injected note")
			}
			summary, findings := replayInjected(t, capPath)
			if !strings.Contains(summary, inject.Notice) {
				t.Errorf("the replay's summary does not say faults were injected:\n%s", summary)
			}
			if len(findings) > 0 {
				t.Errorf("replay charged the conforming backend or harness for an injected fault:\n%s", strings.Join(findings, "\n"))
			}
		})
	}
}

// TestInjectStdioPerEvent: with per_event processes, the selector picks
// the one event, in its own process.
func TestInjectStdioPerEvent(t *testing.T) {
	stderr, capPath := injectedRun(t, "per_event", "error=-32001,id=evt_demo_3")
	if got := harnessSaid(t, stderr, "git push"); !strings.Contains(got, "operational_failure: JSON-RPC error -32001") {
		t.Errorf("the injected request: %q", got)
	}
	if got := harnessSaid(t, stderr, "npm test"); !strings.Contains(got, "no_effect") {
		t.Errorf("a request no selector chose: %q", got)
	}
	if _, findings := replayInjected(t, capPath); len(findings) > 0 {
		t.Errorf("replay charged someone for an injected fault:\n%s", strings.Join(findings, "\n"))
	}
}

// TestInjectBadSpecIsAUsageError: a bad spec, or a fault of the other
// binding, is one line and exit 2, before any backend starts.
func TestInjectBadSpecIsAUsageError(t *testing.T) {
	for spec, want := range map[string]string{
		"explode":                "unknown fault",
		"drop,event=tool_before": "not an AHP event type",
		"status=503":             "is an HTTP fault",
	} {
		r := runTap(t, "", "stdio", "--inject", spec, "--", tapBinary, "example-backend")
		if r.code != 2 || !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
			t.Errorf("--inject %q: exit %d, stderr %q; want exit 2 and a line with %q", spec, r.code, r.stderr, want)
		}
	}
}
