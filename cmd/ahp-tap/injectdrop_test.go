package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/conduct/live"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

// dropRegistration writes a registration of two persistent example
// backends, each behind `ahp-tap stdio` with --conduct and a capture in
// the returned directory: com.example.a with policy and the faults specs,
// its intercepts due in timeoutMs; com.example.b fail-closed, and an
// observer of tool.after (so that a denied call that ran shows) and of
// the events in observe.
func dropRegistration(t *testing.T, policy string, timeoutMs int, observe []string, specs ...string) (reg, taps string) {
	t.Helper()
	dir := t.TempDir()
	reg, taps = filepath.Join(dir, "hooks.json"), filepath.Join(dir, "taps")
	if err := os.Mkdir(taps, 0o700); err != nil {
		t.Fatal(err)
	}
	hook := func(id, policy string, timeoutMs int, subs string, specs ...string) string {
		args := []string{"stdio", "--registration", reg, "--hook", id, "--capture", filepath.Join(taps, id+".capture"),
			"--conduct", filepath.Join(taps, "conduct")}
		for _, s := range specs {
			args = append(args, "--inject", s)
		}
		args = append(args, "--", tapBinary, "example-backend")
		a, _ := json.Marshal(args)
		b, _ := json.Marshal(map[string]any{"events": []string{"tool.before"}, "mode": "intercept", "timeoutMs": timeoutMs,
			"failurePolicy": policy, "content": map[string]string{"default": "body"}})
		return `{"id":"` + id + `","transport":{"type":"stdio","command":"` + tapBinary + `","args":` + string(a) + `,"lifecycle":"persistent"},` +
			`"subscriptions":[` + string(b) + subs + `]}`
	}
	doc := `{"protocolVersion":"draft","hooks":[` + hook("com.example.a", policy, timeoutMs, "", specs...) + "," +
		hook("com.example.b", "fail-closed", 5000, `,{"events":`+jsonText(append([]string{"tool.after"}, observe...))+`,"mode":"observe","content":{"default":"body"}}`) + `]}`
	if err := os.WriteFile(reg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return reg, taps
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestInjectDropVerdicts: an intercept whose answer the tap drops on
// purpose (--inject drop) between the example harness and two real
// backends. A harness that gives up at the deadline, retrying (if at all)
// within it with the same event id, passes; each wrong reaction gets its
// conduct finding, live (the conduct server's log) and on replay of the
// captures alike: a retry under a new event id (COND-9), a retry after the
// deadline (COND-10), going on long after the deadline (COND-10), taking
// a fail-closed interceptor's silence as allow (COND-8). Nothing is
// charged to the backends, whose answers the tap swallowed.
func TestInjectDropVerdicts(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	for _, c := range []struct {
		policy, fault, want string
	}{
		{"fail-open", "none", ""},
		{"fail-open", "retry", ""},
		{"fail-open", "retry-new-id", "COND-9/second-before"},
		{"fail-open", "retry-late", "COND-10/retry-late"},
		{"fail-open", "give-up-late", "COND-10/gave-up-late"},
		{"fail-closed", "none", ""},
		{"fail-closed", "timeout-allow", "COND-8/ran-after-deny"},
	} {
		t.Run(c.policy+"/"+c.fault, func(t *testing.T) {
			reg, taps := dropRegistration(t, c.policy, 2000, nil, "drop,id=evt_conduct_3")
			said := runConductHarness(t, reg, c.fault)
			if c.fault != "timeout-allow" && c.fault != "retry-new-id" && !strings.Contains(said, "evt_conduct_3 → com.example.a: operational_failure: no response before the deadline") {
				t.Fatalf("the harness never missed the dropped answer's deadline:\n%s", said)
			}
			if strings.HasPrefix(c.fault, "retry") && !strings.Contains(said, "re-sending it as") {
				t.Fatalf("the harness never retried:\n%s", said)
			}
			replayed, rr := liveAndReplayed(t, taps)
			switch {
			case c.want == "" && len(replayed) > 0:
				t.Errorf("conduct findings %v for a harness that reacted rightly\n%s", replayed, said)
			case c.want != "" && !slices.Contains(replayed, c.want):
				t.Errorf("conduct findings %v, want %s\n%s\n%s", replayed, c.want, said, rr.stdout)
			}
			// The backends answered every request: nothing is theirs to
			// answer for, and a retry within the deadline after a
			// dropped answer is no BASE-6 (the harness never got it).
			var doc struct {
				Findings []struct{ Check, Level, Message string }
			}
			json.Unmarshal([]byte(rr.stdout), &doc)
			for _, f := range doc.Findings {
				if f.Level != "info" && !strings.HasPrefix(f.Check, "COND-") && !(c.fault == "retry-late" && f.Check == "BASE-6") &&
					!(c.fault == "retry-new-id" && f.Check == "STDIO-3") { // its retry is a second intercept, the first one still the backend's
					t.Errorf("per-link finding %s: %s", f.Check, f.Message)
				}
			}
		})
	}
}

// runConductHarness runs the example harness with fault against reg and
// returns what it said.
func runConductHarness(t *testing.T, reg, fault string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tapBinary, "example-harness", "--registration", reg, "--fault", fault)
	cmd.Env = append(os.Environ(), live.IdleEnv+"=300ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("example-harness: %v\n%s", err, stderr.String())
	}
	return stderr.String()
}

// liveAndReplayed returns the conduct findings (rules) of the taps' live
// conduct server, once it ended, after checking that the replay of the
// captures has the same; and the replay's JSON report.
func liveAndReplayed(t *testing.T, taps string) ([]string, result) {
	t.Helper()
	liveRules := waitConductServer(t, filepath.Join(taps, "conduct"))
	replayed, nc, rr := replayConduct(t, "--conduct", "on", taps)
	if nc != "" {
		t.Errorf("not checked: %s", nc)
	}
	slices.Sort(liveRules)
	slices.Sort(replayed)
	if strings.Join(liveRules, " ") != strings.Join(replayed, " ") {
		serr, _ := os.ReadFile(live.PathsFor(filepath.Join(taps, "conduct")).Err)
		logText, _ := os.ReadFile(live.PathsFor(filepath.Join(taps, "conduct")).Log)
		t.Errorf("live conduct findings %v, replay %v; the conduct server's stderr:\n%s\nits log:\n%s", liveRules, replayed, serr, logText)
	}
	return replayed, rr
}

// TestInjectHookFailureVerdicts: after an injected failure of the first
// interceptor (an error in the backend's place, or a dropped answer), the
// example harness reports it as hook.failure to com.example.b, which
// observes hook.failure: naming the backend, the event and the policy, it
// passes; naming the other policy is COND-11/names (a warning); saying
// nothing is COND-11/none-sent, information only (AHP allows it). Live
// and on replay alike.
func TestInjectHookFailureVerdicts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec, policy, fault, want, level string
	}{
		{"error,id=evt_conduct_3", "fail-open", "none", "", ""},
		{"drop,id=evt_conduct_3", "fail-closed", "none", "", ""},
		{"error,id=evt_conduct_3", "fail-closed", "wrong-hook-failure", "COND-11/names", "warn"},
		{"error,id=evt_conduct_3", "fail-open", "no-hook-failure", "COND-11/none-sent", "info"},
	} {
		t.Run(c.spec+"/"+c.policy+"/"+c.fault, func(t *testing.T) {
			reg, taps := dropRegistration(t, c.policy, 2000, []string{"hook.failure"}, c.spec)
			said := runConductHarness(t, reg, c.fault)
			sent := strings.Contains(said, "hook.failure evt_conduct_3_failure_1 → com.example.b: observed")
			if sent == (c.fault == "no-hook-failure") {
				t.Fatalf("--fault %s: hook.failure sent: %v\n%s", c.fault, sent, said)
			}
			replayed, rr := liveAndReplayed(t, taps)
			var doc struct {
				Findings []struct{ Check, Rule, Level, Message string }
			}
			json.Unmarshal([]byte(rr.stdout), &doc)
			var levels []string
			for _, f := range doc.Findings {
				if f.Rule == c.want {
					levels = append(levels, f.Level)
				}
				if f.Level != "info" && !strings.HasPrefix(f.Check, "COND-") {
					t.Errorf("per-link finding %s: %s", f.Check, f.Message)
				}
			}
			switch {
			case c.want == "" && len(replayed) > 0:
				t.Errorf("conduct findings %v for a harness that reported the failure rightly\n%s", replayed, said)
			case c.want != "" && (len(replayed) != 1 || replayed[0] != c.want || strings.Join(levels, " ") != c.level):
				t.Errorf("conduct findings %v (levels %v), want one %s (%s)\n%s", replayed, levels, c.want, c.level, said)
			}
		})
	}
}

// TestInjectDropVerdictsHTTP: the dropped answer on an HTTP backend (the
// tap keeps the harness's POST open, swallowing the backend's answer):
// a harness that gives up at the deadline and goes on to the next
// interceptor passes; one that waits well past it is COND-10, live and
// on replay alike.
func TestInjectDropVerdictsHTTP(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ fault, want string }{{"none", ""}, {"give-up-late", "COND-10/gave-up-late"}} {
		t.Run(c.fault, func(t *testing.T) {
			dir := t.TempDir()
			taps := filepath.Join(dir, "taps")
			os.MkdirAll(filepath.Join(taps, "conduct"), 0o700)
			// Both hooks are tapped (as wrap --conduct says): the HTTP one too.
			if err := live.WriteTapped(live.PathsFor(filepath.Join(taps, "conduct")).Tapped, []string{"com.example.a", "com.example.b"}); err != nil {
				t.Fatal(err)
			}
			reg := filepath.Join(dir, "hooks.json")
			b, _ := json.Marshal([]string{"stdio", "--registration", reg, "--hook", "com.example.b", "--capture", filepath.Join(taps, "com.example.b.capture"),
				"--conduct", filepath.Join(taps, "conduct"), "--", tapBinary, "example-backend"})
			doc := func(url string) string {
				return `{"protocolVersion":"draft","hooks":[` +
					`{"id":"com.example.a","transport":{"type":"http","url":"` + url + `"},"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":2000,"failurePolicy":"fail-open","content":{"default":"body"}}]},` +
					`{"id":"com.example.b","transport":{"type":"stdio","command":"` + tapBinary + `","args":` + string(b) + `,"lifecycle":"persistent"},"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"body"}}]}]}`
			}
			os.WriteFile(reg, []byte(doc("http://127.0.0.1:9/agent-hooks")), 0o600)
			backend := freePort(t)
			be := exec.Command(tapBinary, "example-backend", "--listen", backend)
			if err := be.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { be.Process.Kill(); be.Wait() }()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if c, err := net.Dial("tcp", backend); err == nil {
					c.Close()
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the example backend does not listen on %s", backend)
				}
			}
			lt := startHTTPTapEnv(t, []string{live.IdleEnv + "=300ms"}, "--upstream", "http://"+backend, "--registration", reg, "--hook", "com.example.a",
				"--capture", filepath.Join(taps, "com.example.a.capture"), "--conduct", filepath.Join(taps, "conduct"), "--inject", "drop,id=evt_conduct_3")
			addr := lt.waitFor(t, "listening on", "http://")
			harnessReg := filepath.Join(dir, "hooks.harness.json")
			os.WriteFile(harnessReg, []byte(doc("http://"+addr+"/agent-hooks")), 0o600)
			said := runConductHarness(t, harnessReg, c.fault)
			if !strings.Contains(said, "evt_conduct_3 → com.example.a: operational_failure") {
				t.Fatalf("the harness never missed the dropped answer:\n%s", said)
			}
			lt.cmd.Process.Signal(syscall.SIGTERM)
			<-lt.done
			lt.cmd.Wait()
			replayed, _ := liveAndReplayed(t, taps)
			switch {
			case c.want == "" && len(replayed) > 0:
				t.Errorf("conduct findings %v for a harness that gave up at the deadline\n%s", replayed, said)
			case c.want != "" && !slices.Contains(replayed, c.want):
				t.Errorf("conduct findings %v, want %s\n%s", replayed, c.want, said)
			}
		})
	}
}
