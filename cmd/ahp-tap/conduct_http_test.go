package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/conduct/live"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

// startExampleHTTPBackend starts `ahp-tap example-backend --listen` on a
// free loopback port in mode and returns its address; the test stops it.
func startExampleHTTPBackend(t *testing.T, mode string) string {
	t.Helper()
	cmd := exec.Command(tapBinary, "example-backend", "--listen", "127.0.0.1:0", "--mode", mode)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	sc := bufio.NewScanner(pipe)
	const serving = "serving AHP over HTTP on http://"
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), serving); ok {
			addr, _, _ := strings.Cut(rest, "/")
			go func() {
				for sc.Scan() {
				}
			}()
			return addr
		}
	}
	t.Fatalf("example-backend --mode %s never said where it serves", mode)
	return ""
}

// freePorts returns the first of n consecutive loopback ports that are free
// now (wrap gives the n-th HTTP backend --listen-base+n).
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{ln}
		for i := 1; i < n; i++ {
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i)); err == nil {
				lns = append(lns, l)
			}
		}
		for _, l := range lns {
			l.Close()
		}
		if len(lns) == n && base+n <= 65535 {
			return base
		}
	}
	t.Fatal("no free consecutive loopback ports")
	return 0
}

// routeHook is one backend of a conduct test registration: an example
// backend over HTTP (its address) or over stdio (persistent).
type routeHook struct {
	id, mode, policy string
	http             bool
	observeAfter     bool
	timeoutMs        int // 0: 5000
}

// conductHTTPRun wraps a registration of hooks with `wrap --conduct`,
// starts the one `ahp-tap http` command wrap prints (one --route per HTTP
// backend), runs the example harness with fault, stops the tap, and
// returns the live conduct rules, the replayed ones, what replay could not
// check, the harness's stderr and the taps' directory.
func conductHTTPRun(t *testing.T, fault string, hooks ...routeHook) (liveRules, replayRules []string, notChecked, say, taps string) {
	t.Helper()
	dir := t.TempDir()
	var hs []string
	nHTTP := 0
	for _, h := range hooks {
		subs := fmt.Sprintf(`{"events":["tool.before"],"mode":"intercept","timeoutMs":%d,"failurePolicy":%q,"content":{"default":"body"}}`, cmp.Or(h.timeoutMs, 5000), h.policy)
		if h.observeAfter {
			subs += `,{"events":["tool.after"],"mode":"observe","content":{"default":"body"}}`
		}
		var tr string
		if h.http {
			nHTTP++
			tr = fmt.Sprintf(`{"type":"http","url":"http://%s/agent-hooks"}`, startExampleHTTPBackend(t, h.mode))
		} else {
			a := []string{"example-backend", "--mode", h.mode}
			if h.mode == "slow" {
				// Long enough that out-of-order dispatch is seen beyond the
				// clock tolerance (5 ms); no test asserts a duration.
				a = append(a, "--delay", "100ms")
			}
			args, _ := json.Marshal(a)
			tr = fmt.Sprintf(`{"type":"stdio","command":%q,"args":%s,"lifecycle":"persistent"}`, tapBinary, args)
		}
		hs = append(hs, fmt.Sprintf(`{"id":%q,"transport":%s,"subscriptions":[%s]}`, h.id, tr, subs))
	}
	in := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(in, []byte(`{"protocolVersion":"draft","hooks":[`+strings.Join(hs, ",")+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	taps = filepath.Join(dir, "taps")
	tapped := filepath.Join(dir, "hooks.tapped.json")
	w := runTap(t, "", "wrap", "--conduct", "--dir", taps, "--tap", tapBinary, "--listen-base", strconv.Itoa(freePorts(t, nHTTP)), "-o", tapped, in)
	if w.code != 0 {
		t.Fatalf("wrap --conduct: exit %d: %s", w.code, w.stderr)
	}
	// The one command wrap prints for every HTTP backend.
	var argv []string
	lines := strings.Split(w.stderr, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "ahp-tap wrap: start the HTTP tap before the harness") && i+1 < len(lines) {
			if argv != nil {
				t.Fatalf("wrap printed more than one ahp-tap http command:\n%s", w.stderr)
			}
			if strings.ContainsAny(lines[i+1], `'"\`) {
				t.Fatalf("the command needs a shell to read it: %s", lines[i+1])
			}
			argv = strings.Fields(lines[i+1])
		}
	}
	if argv == nil || argv[0] != tapBinary || argv[1] != "http" {
		t.Fatalf("wrap printed no ahp-tap http command:\n%s", w.stderr)
	}
	if n := strings.Count(strings.Join(argv, " "), "--route "); n != nHTTP {
		t.Fatalf("the command has %d --route, want %d: %q", n, nHTTP, argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), live.IdleEnv+"=300ms")
	lt := startLiveTap(t, cmd)
	for range nHTTP {
		lt.waitFor(t, "listening on", "http://")
	}

	hc := exec.Command(tapBinary, "example-harness", "--registration", tapped, "--fault", fault)
	hc.Env = append(os.Environ(), live.IdleEnv+"=300ms")
	var hstderr strings.Builder
	hc.Stderr = &hstderr
	if err := hc.Run(); err != nil {
		t.Fatalf("example-harness: %v: %s", err, hstderr.String())
	}
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	if err := lt.cmd.Wait(); err != nil {
		t.Errorf("ahp-tap http: %v\n%s", err, lt.stderrText())
	}
	// Each route's capture names its hook: replay places it by that.
	for _, h := range hooks {
		if !h.http {
			continue
		}
		hdr := captureHeader(t, filepath.Join(taps, h.id+".capture"))
		if hdr.Hook != h.id || len(hdr.RegistrationDoc) == 0 {
			t.Errorf("%s.capture: header hook %q, registration embedded: %v", h.id, hdr.Hook, len(hdr.RegistrationDoc) > 0)
		}
	}
	liveRules = waitConductServer(t, filepath.Join(taps, "conduct"))
	replayRules, notChecked, _ = replayConduct(t, taps)
	if !slices.Equal(sorted(liveRules), sorted(replayRules)) {
		serr, _ := os.ReadFile(live.PathsFor(filepath.Join(taps, "conduct")).Err)
		t.Logf("live %v, replay %v; the conduct server's stderr:\n%s\nthe HTTP tap's:\n%s", liveRules, replayRules, serr, lt.stderrText())
	}
	return sorted(liveRules), sorted(replayRules), notChecked, hstderr.String(), taps
}

// captureHeader reads the header of the capture at path.
func captureHeader(t *testing.T, path string) capture.Header {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadBytes('\n')
	var h capture.Header
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatalf("%s: header: %v", path, err)
	}
	return h
}

// condChecks are the checks of conduct rules, each once.
func condChecks(rules []string) string {
	var out []string
	for _, r := range rules {
		c, _, _ := strings.Cut(r, "/")
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// Two HTTP backends behind one `ahp-tap http` (the command `wrap
// --conduct` prints, one --route each): a fail-open interceptor that
// always fails, then the example policy. Conforming dispatch goes on past
// the fail-open failures and gives no conduct finding, live or on replay;
// ending the chain at a fail-open failure gives COND-3, live and on
// replay alike.
func TestConductTwoHTTPBackendsOneTap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ fault, want string }{{"none", ""}, {"fail-open-stop", "COND-3"}} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			liveRules, replayRules, nc, say, _ := conductHTTPRun(t, tc.fault,
				routeHook{id: "com.example.b", mode: "error", policy: "fail-open", http: true},
				routeHook{id: "com.example.a", mode: "conforming", policy: "fail-closed", http: true, observeAfter: true})
			if strings.Join(liveRules, " ") != strings.Join(replayRules, " ") {
				t.Errorf("--fault %s: live %v, replay %v", tc.fault, liveRules, replayRules)
			}
			if got := condChecks(replayRules); got != tc.want || nc != "" {
				t.Errorf("--fault %s: conduct findings %v (not checked %q), want %q\n%s", tc.fault, replayRules, nc, tc.want, say)
			}
			if tc.fault == "none" && (!strings.Contains(say, "com.example.b: operational_failure") || !strings.Contains(say, "com.example.a: explicit_deny")) {
				t.Errorf("the session lacks a fail-open failure or a deny:\n%s", say)
			}
		})
	}
}

// A mixed registration: two HTTP backends behind one `ahp-tap http` and a
// stdio one (slow), all with --conduct DIR: one timeline, one verdict. The
// conforming session has fail-open failures, a deny and the short-circuit
// observe of the stdio interceptor it left uncalled, and no conduct
// finding; out-of-order dispatch gives COND-1; going on to the stdio
// interceptor right after the HTTP deny (well within the 5 ms clock
// tolerance) COND-2; running the denied call COND-8. Live and replayed
// alike.
func TestConductMixedStdioAndHTTPRoutes(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	for _, tc := range []struct{ fault, want string }{{"none", ""}, {"out-of-order", "COND-1"}, {"continue-after-deny", "COND-2"}, {"run-denied", "COND-8"}} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			liveRules, replayRules, nc, say, _ := conductHTTPRun(t, tc.fault,
				routeHook{id: "com.example.b", mode: "error", policy: "fail-open", http: true},
				routeHook{id: "com.example.a", mode: "conforming", policy: "fail-closed", http: true},
				routeHook{id: "com.example.c", mode: "slow", policy: "fail-closed", observeAfter: true})
			if strings.Join(liveRules, " ") != strings.Join(replayRules, " ") {
				t.Errorf("--fault %s: live %v, replay %v", tc.fault, liveRules, replayRules)
			}
			if got := condChecks(replayRules); got != tc.want || nc != "" {
				t.Errorf("--fault %s: conduct findings %v (not checked %q), want %q\n%s", tc.fault, replayRules, nc, tc.want, say)
			}
			if tc.fault == "none" && !strings.Contains(say, "tool.before evt_conduct_2 → com.example.c: observed") {
				t.Errorf("no short-circuit observe to the uncalled stdio interceptor:\n%s", say)
			}
		})
	}
}

// --route replaces the single-link flags, and each route is checked
// before anything listens: a bad one is a usage error (exit 2, one line).
func TestHTTPRouteUsage(t *testing.T) {
	t.Parallel()
	reg := writeFile(t, "hooks.json", twoHooks)
	dir := t.TempDir()
	a := "hook=com.example.a,listen=127.0.0.1:0,upstream=http://127.0.0.1:1"
	b := "hook=com.example.b,listen=127.0.0.1:0,upstream=http://127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--registration", reg, "--route", a, "--upstream", "http://127.0.0.1:1"}, "--route replaces --upstream"},
		{[]string{"--registration", reg, "--route", a, "--hook", "com.example.a"}, "--route replaces --hook"},
		{[]string{"--registration", reg, "--route", "listen=127.0.0.1:0"}, "has no upstream=URL"},
		{[]string{"--registration", reg, "--route", "port=1,listen=127.0.0.1:0,upstream=http://h"}, "a route starts with one of"},
		{[]string{"--registration", reg, "--route", a, "--route", "hook=com.example.b,listen=127.0.0.1:0,upstream=http://u:route-secret-0123456789@127.0.0.1:1"}, "must not carry credentials"},
		{[]string{"--registration", reg, "--route", "hook=com.example.b,upstream=http://u:route-secret-0123456789@127.0.0.1:1"}, "has no listen=ADDR"},
		{[]string{"--registration", reg, "--route", "hook=com.example.b,listen=127.0.0.1:0,upstream=ftp://u:route-secret-0123456789@h/"}, "is not an absolute http:// or https:// URL"},
		{[]string{"--registration", reg, "--route", a, "--route", a}, `hook "com.example.a" has two routes`},
		{[]string{"--registration", reg, "--route", "listen=127.0.0.1:0,upstream=http://127.0.0.1:1"}, "give hook=ID"},
		{[]string{"--route", a}, "hook= needs --registration"},
		{[]string{"--registration", reg, "--route", a, "--route", "hook=com.example.z,listen=127.0.0.1:0,upstream=http://127.0.0.1:1"}, `no hook with id "com.example.z"`},
		{[]string{"--registration", reg, "--route", a, "--route", "hook=com.example.b,listen=127.0.0.1:0,upstream=ftp://h"}, "is not an absolute http:// or https:// URL"},
		{[]string{"--registration", reg, "--route", a + ",capture=" + filepath.Join(dir, "x"), "--route", b + ",capture=" + filepath.Join(dir, "x")}, "is given to two routes"},
		{[]string{"--registration", reg, "--audit-budget", "1MiB", "--route", a, "--route", b}, "less than 1MiB per route"},
		{[]string{"--conduct", dir, "--route", "listen=127.0.0.1:0,upstream=http://127.0.0.1:1"}, "--conduct needs --registration"},
	} {
		r := runTap(t, "", append([]string{"http"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || strings.Contains(r.stderr, "route-secret") {
			t.Errorf("ahp-tap http %q: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	// Nothing was created for a refused command, and a credential in a
	// route's upstream is never echoed.
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a refused command created %v", ents)
	}
}

// A single-link tap of a one-hook registration without --hook is that
// hook's link: its capture header names it (replay places it by that), as
// a route's does.
func TestHTTPOnlyHookInCaptureHeader(t *testing.T) {
	t.Parallel()
	reg := writeFile(t, "hooks.json", `{"protocolVersion":"draft","hooks":[{"id":"com.example.only","transport":{"type":"http","url":"http://127.0.0.1:1/h"},"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-closed"}]}]}`)
	dir := t.TempDir()
	one, two := filepath.Join(dir, "one.capture"), filepath.Join(dir, "two.capture")
	lt := startHTTPTap(t, "--upstream", "http://127.0.0.1:1", "--registration", reg, "--capture", one)
	lt.waitFor(t, "listening on", "http://")
	lt.cmd.Process.Signal(syscall.SIGTERM)
	<-lt.done
	lt.cmd.Wait()
	two2 := writeFile(t, "hooks2.json", twoHooks)
	lr := &liveTap{cmd: exec.Command(tapBinary, "http", "--registration", two2,
		"--route", "hook=com.example.b,listen=127.0.0.1:0,upstream=http://127.0.0.1:1,capture="+two),
		lines: make(chan string, 100), done: make(chan struct{})}
	pipe, _ := lr.cmd.StderrPipe()
	if err := lr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(lr.done)
		defer close(lr.lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lr.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { lr.cmd.Process.Kill(); lr.cmd.Wait() })
	if line := lr.waitFor(t, "listening on", "http://"); line == "" {
		t.Fatal("no listener")
	}
	lr.cmd.Process.Signal(syscall.SIGTERM)
	for range lr.lines {
	}
	lr.cmd.Wait()
	for path, want := range map[string]string{one: "com.example.only", two: "com.example.b"} {
		if h := captureHeader(t, path); h.Hook != want || len(h.RegistrationDoc) == 0 {
			t.Errorf("%s: header hook %q, want %q with the registration embedded", filepath.Base(path), h.Hook, want)
		}
	}
}

// No false positive on conforming multi-backend HTTP traffic whose
// fail-open interceptors fail in every way HTTP lets them: one never
// answers (the harness gives up at the 300 ms deadline and goes on), one
// drops the connection and exits (the tap answers 502 to that request
// and to every later one). The chain goes on to the example policy each
// time, a deny short-circuits to the stdio interceptor it left uncalled;
// live and replayed, no conduct finding. Stopping at those failures
// instead gives COND-3, so the same traffic does make findings when the
// harness is wrong.
func TestConductHTTPFailOpenFailuresNoFalsePositive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ fault, want string }{{"none", ""}, {"fail-open-stop", "COND-3"}} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			liveRules, replayRules, nc, say, _ := conductHTTPRun(t, tc.fault,
				routeHook{id: "com.example.silent", mode: "silent", policy: "fail-open", http: true, timeoutMs: 300},
				routeHook{id: "com.example.crash", mode: "crash", policy: "fail-open", http: true},
				routeHook{id: "com.example.policy", mode: "conforming", policy: "fail-closed", http: true},
				routeHook{id: "com.example.last", mode: "conforming", policy: "fail-closed", observeAfter: true})
			if strings.Join(liveRules, " ") != strings.Join(replayRules, " ") {
				t.Errorf("--fault %s: live %v, replay %v", tc.fault, liveRules, replayRules)
			}
			if got := condChecks(replayRules); got != tc.want || nc != "" {
				t.Errorf("--fault %s: conduct findings %v (not checked %q), want %q\n%s", tc.fault, replayRules, nc, tc.want, say)
			}
			if tc.fault == "none" && (!strings.Contains(say, "com.example.crash: operational_failure") || !strings.Contains(say, "com.example.silent: operational_failure") ||
				!strings.Contains(say, "tool.before evt_conduct_2 → com.example.last: observed")) {
				t.Errorf("the session lacks a failure of each fail-open backend or the short-circuit observe:\n%s", say)
			}
		})
	}
}

// A fail-closed HTTP interceptor that never answers: the harness gives up
// at its 300 ms deadline, ends the chain (the call is denied), sends the
// short-circuit observe to the interceptor it did not call, and reports
// the call as denied in tool.after. Conforming: no conduct finding, live
// or replayed, though the observe comes within the clock tolerance of the
// deadline. Running the call anyway is COND-8.
func TestConductHTTPFailClosedTimeoutNoFalsePositive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ fault, want string }{{"none", ""}, {"run-denied", "COND-8"}} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			liveRules, replayRules, nc, say, _ := conductHTTPRun(t, tc.fault,
				routeHook{id: "com.example.silent", mode: "silent", policy: "fail-closed", http: true, timeoutMs: 300},
				routeHook{id: "com.example.policy", mode: "conforming", policy: "fail-closed", http: true, observeAfter: true})
			if strings.Join(liveRules, " ") != strings.Join(replayRules, " ") {
				t.Errorf("--fault %s: live %v, replay %v", tc.fault, liveRules, replayRules)
			}
			if got := condChecks(replayRules); got != tc.want || nc != "" {
				t.Errorf("--fault %s: conduct findings %v (not checked %q), want %q\n%s", tc.fault, replayRules, nc, tc.want, say)
			}
			if tc.fault == "none" && !strings.Contains(say, "tool.before evt_conduct_1 → com.example.policy: observed") {
				t.Errorf("no short-circuit observe after the fail-closed failure:\n%s", say)
			}
		})
	}
}
