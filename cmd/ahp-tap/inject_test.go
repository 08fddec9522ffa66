package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
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
	e2e.Only(t)
	cases := []struct {
		spec, want string
	}{
		{"error=-32000,id=evt_demo_5", "operational_failure: JSON-RPC error -32000"},
		{"drop,id=evt_demo_5", "operational_failure: no response before the deadline"},
		{"delay=3s,id=evt_demo_5", "operational_failure: no response before the deadline"},
		{"invalid-deny,id=evt_demo_5", "operational_failure: invalid response"},
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

// injectHTTPTap starts the example backend on loopback and `ahp-tap http
// --inject …` in front of it, and returns the tap's base URL, the tap and
// the capture path.
func injectHTTPTap(t *testing.T, specs ...string) (base string, lt *liveTap, capPath string) {
	t.Helper()
	backend := freePort(t)
	b := exec.Command(tapBinary, "example-backend", "--listen", backend)
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Process.Kill(); b.Wait() })
	capPath = filepath.Join(t.TempDir(), "h.capture")
	args := []string{"--upstream", "http://" + backend, "--capture", capPath}
	for _, s := range specs {
		args = append(args, "--inject", s)
	}
	lt = startHTTPTap(t, args...)
	lt.waitFor(t, "ahp-tap http: "+inject.Notice, "")
	addr := lt.waitFor(t, "listening on", "http://")
	if r := runTap(t, "", "example-harness", "--wait-for", backend, "--url", "http://"+addr+"/agent-hooks", "--timeout", "5s"); r.code != 0 {
		t.Fatalf("example-harness through the tap: exit %d: %s", r.code, r.stderr)
	}
	return "http://" + addr + "/agent-hooks", lt, capPath
}

// TestInjectHTTPFaults: over real loopback HTTP, each selected request gets
// the tap's answer (a JSON-RPC error, a status with Retry-After, an invalid
// deny, a closed connection, no answer), a request no selector chose gets
// the backend's, and the capture replays with no finding and says the
// traffic was altered.
func TestInjectHTTPFaults(t *testing.T) {
	base, lt, capPath := injectHTTPTap(t, "error=-32000,id=err", "status=503,retry-after=7,id=busy", "invalid-deny,id=bad",
		"close,id=cut", "drop,id=gone")
	post := func(id string, timeout time.Duration) (*http.Response, []byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		body := `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-inject-secret-0123456789")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	if resp, b, err := post("err", time.Minute); err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), `"code":-32000`) {
		t.Errorf("error=-32000: %v %v %s", err, resp, b)
	}
	if resp, b, err := post("busy", time.Minute); err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("status=503,retry-after=7: %v %v %s", err, resp, b)
	}
	if resp, b, err := post("bad", time.Minute); err != nil || !strings.Contains(string(b), `"type":42`) || !strings.Contains(string(b), `"deny"`) {
		t.Errorf("invalid-deny: %v %v %s", err, resp, b)
	}
	if _, _, err := post("cut", time.Minute); err == nil {
		t.Errorf("close: the harness got an answer")
	}
	if _, _, err := post("gone", 500*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("drop: %v, want the harness's own deadline", err)
	}
	if resp, b, err := post("fine", time.Minute); err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), `"manifest"`) {
		t.Errorf("a request no selector chose: %v %v %s", err, resp, b)
	}
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	lt.cmd.Wait()
	capText, err := os.ReadFile(capPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(capText), "sk-inject-secret") {
		t.Error("the capture holds the bearer token")
	}
	if n := strings.Count(string(capText), `"kind":"injected"`); n != 5 {
		t.Errorf("%d injected notes, want 5", n)
	}
	if n := strings.Count(string(capText), `"kind":"swallowed"`); n != 5 {
		t.Errorf("%d swallowed notes, want 5", n)
	}
	summary, findings := replayInjected(t, capPath)
	if !strings.Contains(summary, inject.Notice) {
		t.Errorf("the replay's summary does not say faults were injected:\n%s", summary)
	}
	if len(findings) > 0 {
		t.Errorf("replay charged the conforming backend or harness for an injected fault:\n%s", strings.Join(findings, "\n"))
	}
}

// injectRegistration writes a registration of two persistent example
// backends, each behind `ahp-tap stdio` capturing into the returned
// directory: the first with the policy first and the faults specs, the
// second fail-closed.
func injectRegistration(t *testing.T, first string, specs ...string) (reg, taps string) {
	t.Helper()
	dir := t.TempDir()
	reg, taps = filepath.Join(dir, "hooks.json"), filepath.Join(dir, "taps")
	if err := os.Mkdir(taps, 0o700); err != nil {
		t.Fatal(err)
	}
	hook := func(id, policy string, specs ...string) string {
		args := []string{"stdio", "--registration", reg, "--hook", id, "--capture", filepath.Join(taps, id+".capture")}
		for _, s := range specs {
			args = append(args, "--inject", s)
		}
		args = append(args, "--", tapBinary, "example-backend")
		a, _ := json.Marshal(args)
		return `{"id":"` + id + `","transport":{"type":"stdio","command":"` + tapBinary + `","args":` + string(a) + `,"lifecycle":"persistent"},` +
			`"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"` + policy + `","content":{"default":"body"}}]}`
	}
	doc := `{"protocolVersion":"draft","hooks":[` + hook("com.example.a", first, specs...) + "," + hook("com.example.b", "fail-closed") + `]}`
	if err := os.WriteFile(reg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return reg, taps
}

// TestInjectReactionVerdicts: the conduct checks judge the harness by what
// it got, the injected failure, not by the backend's swallowed answer: a
// harness that goes on after an injected fail-open failure passes, one
// that stops there is COND-3; one that stops after an injected fail-closed
// failure passes. Judged on replay of the captures.
func TestInjectReactionVerdicts(t *testing.T) {
	e2e.Only(t)
	for _, c := range []struct {
		policy, fault, want, spec string
	}{
		{"fail-open", "none", "", ""},
		{"fail-open", "fail-open-stop", "COND-3/fail-open-stopped", ""},
		{"fail-closed", "none", "", ""},
		{"fail-open", "none", "", "invalid-deny,event=tool.before"},
		{"fail-open", "accept-invalid-deny", "COND-3/fail-open-stopped", "invalid-deny,event=tool.before"},
	} {
		if c.spec == "" {
			c.spec = "error,event=tool.before"
		}
		t.Run(c.policy+"/"+c.fault+"/"+c.spec, func(t *testing.T) {
			reg, taps := injectRegistration(t, c.policy, c.spec)
			r := runTap(t, "", "example-harness", "--registration", reg, "--fault", c.fault)
			if r.code != 0 {
				t.Fatalf("example-harness: exit %d: %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "injected by ahp-tap") && !strings.Contains(r.stderr, "invalid response") {
				t.Fatalf("the harness never got the injected failure:\n%s", r.stderr)
			}
			cond, nc, rr := replayConduct(t, "--conduct", "on", taps)
			if nc != "" {
				t.Errorf("not checked: %s", nc)
			}
			switch {
			case c.want == "" && len(cond) > 0:
				t.Errorf("conduct findings %v for a harness that reacted rightly\n%s", cond, r.stderr)
			case c.want != "" && !slices.Contains(cond, c.want):
				t.Errorf("conduct findings %v, want %s\n%s\n%s", cond, c.want, r.stderr, rr.stdout)
			}
		})
	}
}
