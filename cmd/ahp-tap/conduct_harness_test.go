package main

import (
	"encoding/json"
	"fmt"
	"github.com/ahp-tap/ahp-tap/conduct/live"
	"github.com/ahp-tap/ahp-tap/examples"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// conductHook is one backend of a test registration.
type conductHook struct {
	id, lifecycle, mode, policy string
	observeAfter                bool
}

// conductRegistration writes a registration whose backends are the example
// backend (run by the test binary's ahp-tap) in the given modes, each an
// interceptor of tool.before, wraps it with `ahp-tap wrap --dir`, and
// returns the wrapped registration and the taps' directory.
func conductRegistration(t *testing.T, hooks ...conductHook) (tapped, taps string) {
	t.Helper()
	dir := t.TempDir()
	var hs []string
	for _, h := range hooks {
		args := []string{"example-backend", "--mode", h.mode}
		if h.mode == "slow" {
			// Long enough that a concurrent intercept is seen beyond the
			// clock tolerance (5 ms); no test asserts a duration.
			args = append(args, "--delay", "100ms")
		}
		a, _ := json.Marshal(args)
		subs := fmt.Sprintf(`{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":%q,"content":{"default":"body"}}`, h.policy)
		if h.observeAfter {
			subs += `,{"events":["tool.after"],"mode":"observe","content":{"default":"body"}}`
		}
		hs = append(hs, fmt.Sprintf(`{"id":%q,"transport":{"type":"stdio","command":%q,"args":%s,"lifecycle":%q},"subscriptions":[%s]}`,
			h.id, tapBinary, a, h.lifecycle, subs))
	}
	in := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(in, []byte(`{"protocolVersion":"draft","hooks":[`+strings.Join(hs, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	taps = filepath.Join(dir, "taps")
	tapped = filepath.Join(dir, "hooks.tapped.json")
	if r := runTap(t, "", "wrap", "--dir", taps, "--tap", tapBinary, "-o", tapped, in); r.code != 0 {
		t.Fatalf("wrap: exit %d: %s", r.code, r.stderr)
	}
	return tapped, taps
}

// conductFindings runs the example harness with fault against the wrapped
// registration, then replays the taps' captures together, and returns the
// checks of the conduct findings and the replay's findings by check.
func conductFindings(t *testing.T, tapped, taps, fault string) (cond []string, all map[string]int, harness string) {
	t.Helper()
	r := runTap(t, "", "example-harness", "--registration", tapped, "--fault", fault)
	if r.code != 0 {
		t.Fatalf("example-harness --fault %s: exit %d: %s", fault, r.code, r.stderr)
	}
	rules, nc, rr := replayConduct(t, taps)
	if nc != "" {
		t.Errorf("every link is tapped, yet: %s", nc)
	}
	var doc struct{ Findings []struct{ Check string } }
	json.Unmarshal([]byte(rr.stdout), &doc)
	all = map[string]int{}
	for _, f := range doc.Findings {
		all[f.Check]++
	}
	for _, ru := range rules {
		c, _, _ := strings.Cut(ru, "/")
		if !slices.Contains(cond, c) {
			cond = append(cond, c)
		}
	}
	slices.Sort(cond)
	return cond, all, r.stderr
}

// The example harness dispatching to three wrapped backends: a persistent
// fail-closed interceptor (slow), a per_event fail-open one that always
// fails, and a persistent fail-closed one that also observes tool.after.
// Conforming dispatch gives no conduct finding, though the chain goes on
// past fail-open failures and a deny sends short-circuit observes; each
// deliberate fault gives its check's finding. Replayed from the captures.
func TestConductHarnessThreeBackends(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	hooks := []conductHook{
		{"com.example.a", "persistent", "slow", "fail-closed", false},
		{"com.example.b", "per_event", "error", "fail-open", false},
		{"com.example.c", "persistent", "conforming", "fail-closed", true},
	}
	for _, f := range examples.Faults {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			tapped, taps := conductRegistration(t, hooks...)
			cond, all, say := conductFindings(t, tapped, taps, f.Name)
			if f.Check == "" || f.Needs != "" {
				// A fault that needs what these backends never do (an
				// unanswered intercept, an invalid deny) conforms here.
				if len(cond) != 0 {
					t.Errorf("conforming dispatch: conduct findings %v\n%s", cond, say)
				}
				if all["BASE-5"] == 0 || !strings.Contains(say, "(fail-open)") || !strings.Contains(say, "the chain stopped: denied by com.example.a") {
					t.Errorf("the conforming session lacks a short-circuit observe (BASE-5 info), a fail-open failure or a deny:\n%s", say)
				}
				return
			}
			if !slices.Contains(cond, string(f.Check)) {
				t.Errorf("--fault %s: conduct findings %v, want %s\n%s", f.Name, cond, f.Check, say)
			}
			if f.Name != "concurrent" && len(cond) != 1 {
				// Concurrent dispatch also breaks the order and the stop, as it happens.
				t.Errorf("--fault %s: conduct findings %v, want only %s", f.Name, cond, f.Check)
			}
		})
	}
}

// Two wrapped backends, a persistent and a per_event one, both conforming
// policies: conforming dispatch gives no conduct finding; the faults that
// apply to two interceptors give theirs.
func TestConductHarnessTwoBackends(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	hooks := []conductHook{
		{"com.example.a", "persistent", "conforming", "fail-closed", false},
		{"com.example.b", "per_event", "conforming", "fail-closed", true},
	}
	for _, tc := range []struct{ fault, want string }{
		{"none", ""}, {"out-of-order", "COND-1"}, {"continue-after-deny", "COND-2"}, {"run-denied", "COND-8"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			tapped, taps := conductRegistration(t, hooks...)
			cond, _, say := conductFindings(t, tapped, taps, tc.fault)
			if strings.Join(cond, " ") != tc.want {
				t.Errorf("--fault %s: conduct findings %v, want %q\n%s", tc.fault, cond, tc.want, say)
			}
		})
	}
}

func TestConductHarnessUsage(t *testing.T) {
	t.Parallel()
	tapped, _ := conductRegistration(t, conductHook{"com.example.a", "persistent", "conforming", "fail-closed", false})
	if r := runTap(t, "", "example-harness", "--registration", tapped, "--fault", "sloppy"); r.code != 2 || !strings.Contains(r.stderr, "unknown --fault") {
		t.Errorf("unknown fault: exit %d, %s", r.code, r.stderr)
	}
	if r := runTap(t, "", "example-harness", "--registration", filepath.Join(t.TempDir(), "none.json")); r.code != 2 {
		t.Errorf("missing registration: exit %d, %s", r.code, r.stderr)
	}
}

// A mixed registration: a stdio backend and an HTTP backend (a loopback
// server behind `ahp-tap http`), the HTTP capture's header naming its
// hook. Replayed together: conforming dispatch gives no conduct finding,
// out-of-order dispatch COND-1; live (wrap --conduct, the HTTP tap with
// --conduct) the same.
func TestConductHarnessHTTPBackend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ fault, want string }{{"none", ""}, {"out-of-order", "COND-1"}} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					ID     string `json:"id"`
					Params struct {
						Event struct {
							Tool struct{ Input struct{ Command string } }
						}
					}
				}
				body, _ := io.ReadAll(r.Body)
				json.Unmarshal(body, &req)
				if req.ID == "" {
					w.WriteHeader(http.StatusAccepted) // a notification
					return
				}
				effects := ""
				if strings.Contains(req.Params.Event.Tool.Input.Command, "--force") {
					effects = `{"type":"deny","reason":"no force pushes"}`
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":{"protocolVersion":"draft","effects":[%s]}}`, req.ID, effects)
			}))
			defer up.Close()
			dir := t.TempDir()
			args, _ := json.Marshal([]string{"example-backend"})
			reg := fmt.Sprintf(`{"protocolVersion":"draft","hooks":[
 {"id":"com.example.a","transport":{"type":"stdio","command":%q,"args":%s,"lifecycle":"persistent"},"subscriptions":[
   {"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"body"}}]},
 {"id":"com.example.h","transport":{"type":"http","url":%q},"subscriptions":[
   {"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"body"}},
   {"events":["tool.after"],"mode":"observe","content":{"default":"body"}}]}]}`, tapBinary, args, up.URL+"/agent-hooks")
			in := filepath.Join(dir, "hooks.json")
			os.WriteFile(in, []byte(reg), 0o600)
			taps := filepath.Join(dir, "taps")
			r := runTap(t, "", "wrap", "--conduct", "--dir", taps, "--tap", tapBinary, in)
			if r.code != 0 {
				t.Fatalf("wrap: %s", r.stderr)
			}
			lt := startHTTPTapEnv(t, []string{live.IdleEnv + "=300ms"}, "--upstream", up.URL, "--registration", in, "--hook", "com.example.h",
				"--capture", filepath.Join(taps, "com.example.h.capture"), "--conduct", filepath.Join(taps, "conduct"))
			addr := lt.waitFor(t, "listening on", "http://")
			var doc map[string]any
			json.Unmarshal([]byte(r.stdout), &doc)
			hooks := doc["hooks"].([]any)
			hooks[1].(map[string]any)["transport"].(map[string]any)["url"] = "http://" + addr + "/agent-hooks"
			tappedJSON, _ := json.Marshal(doc)
			tapped := filepath.Join(dir, "hooks.tapped.json")
			os.WriteFile(tapped, tappedJSON, 0o600)

			hc := exec.Command(tapBinary, "example-harness", "--registration", tapped, "--fault", tc.fault)
			hc.Env = append(os.Environ(), live.IdleEnv+"=300ms")
			var hstderr strings.Builder
			hc.Stderr = &hstderr
			if err := hc.Run(); err != nil {
				t.Fatalf("example-harness: %v: %s", err, hstderr.String())
			}
			h := result{stderr: hstderr.String()}
			lt.cmd.Process.Signal(syscall.SIGTERM)
			<-lt.done
			lt.cmd.Wait()
			rules, nc, _ := replayConduct(t, taps)
			// Live, the HTTP tap fed the same timeline as the stdio one.
			if liveRules := waitConductServer(t, filepath.Join(taps, "conduct")); strings.Join(sorted(liveRules), " ") != strings.Join(sorted(rules), " ") {
				t.Errorf("--fault %s: live %v, replay %v", tc.fault, liveRules, rules)
			}
			var cond []string
			for _, ru := range rules {
				c, _, _ := strings.Cut(ru, "/")
				if !slices.Contains(cond, c) {
					cond = append(cond, c)
				}
			}
			if strings.Join(cond, " ") != tc.want || nc != "" {
				t.Errorf("--fault %s: conduct findings %v (not checked %q), want %q\n%s", tc.fault, rules, nc, tc.want, h.stderr)
			}
			if !strings.Contains(h.stderr, "com.example.h: explicit_deny") && !strings.Contains(h.stderr, "com.example.a: explicit_deny") {
				t.Errorf("no deny in the session:\n%s", h.stderr)
			}
		})
	}
}

// startHTTPTapEnv is startHTTPTap with env added to the tap's environment.
func startHTTPTapEnv(t *testing.T, env []string, args ...string) *liveTap {
	t.Helper()
	cmd := exec.Command(tapBinary, append([]string{"http", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return startLiveTap(t, cmd)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
