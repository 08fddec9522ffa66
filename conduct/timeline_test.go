package conduct

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// threeHooks is a registration of three interceptors of tool.before, in
// this order: a (fail-open), b (fail-closed), c (fail-open), and an
// observer d of tool.* events.
const threeHooks = `{"protocolVersion":"draft","hooks":[
 {"id":"com.example.a","transport":{"type":"stdio","command":"a","lifecycle":"persistent"},"subscriptions":[
   {"events":["tool.before","tool.after"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-open","content":{"default":"body"}}]},
 {"id":"com.example.b","transport":{"type":"stdio","command":"b","lifecycle":"persistent"},"subscriptions":[
   {"events":["tool.before"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-closed","content":{"default":"body"}}]},
 {"id":"com.example.c","transport":{"type":"stdio","command":"c","lifecycle":"persistent"},"subscriptions":[
   {"events":["tool.before","turn.finish.before"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-open","content":{"default":"body"}}]},
 {"id":"com.example.d","transport":{"type":"stdio","command":"d","lifecycle":"persistent"},"subscriptions":[
   {"events":["tool.*"],"mode":"observe","content":{"default":"body"}}]}]}`

const (
	hA, hB, hC, hD = "com.example.a", "com.example.b", "com.example.c", "com.example.d"
)

// rig feeds real per-link tap.Sessions (every rule of rules.Default)
// whose watchers feed one Timeline, as replay and the shared audit do.
type rig struct {
	t        *testing.T
	tl       *Timeline
	sessions map[string]*tap.Session
	found    []tap.Finding
	t0       time.Time
	// tl2 is fed the same frames as Facts through JSON, as live conduct
	// carries them between processes: its findings must be tl's.
	tl2    *Timeline
	found2 []tap.Finding
}

// both feeds a judged frame to the rig's timeline, and as a Fact to tl2.
type both struct {
	r    *rig
	hook string
}

func (b both) Judged(f *tap.Frame, x *tap.Exchange) {
	b.r.tl.Link(b.hook).Judged(f, x)
	if !Relevant(f, x) {
		return
	}
	data, err := json.Marshal(FactOf(b.hook, f, x))
	if err != nil {
		b.r.t.Fatal(err)
	}
	var ft Fact
	if err := json.Unmarshal(data, &ft); err != nil {
		b.r.t.Fatal(err)
	}
	if err := b.r.tl2.Take(ft); err != nil {
		b.r.t.Fatalf("Take: %v", err)
	}
}

func newRig(t *testing.T, reg string, skew time.Duration, tapped ...string) *rig {
	t.Helper()
	doc, _, err := tap.ParseJSON([]byte(reg))
	if err != nil {
		t.Fatal(err)
	}
	if len(tapped) == 0 {
		tapped = []string{hA, hB, hC, hD}
	}
	r := &rig{t: t, sessions: map[string]*tap.Session{}, t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r.tl = New(Config{Registration: doc, Tapped: tapped, Skew: skew,
		Sink: tap.SinkFunc(func(f tap.Finding) { r.found = append(r.found, f) })})
	r.tl2 = New(Config{Registration: doc, Tapped: tapped, Skew: skew,
		Sink: tap.SinkFunc(func(f tap.Finding) { r.found2 = append(r.found2, f) })})
	for _, h := range tapped {
		r.sessions[h] = tap.NewSession(tap.SessionConfig{
			Config: tap.Config{Transport: tap.Stdio, Registration: doc, HookID: h},
			Rules:  rules.Set(rules.Options{}), Watch: both{r, h}})
	}
	return r
}

// at feeds raw to hook's link at t0+ms, sent by dir.
func (r *rig) at(hook string, ms float64, dir tap.Direction, raw string) {
	r.t.Helper()
	s := r.sessions[hook]
	if s == nil {
		r.t.Fatalf("hook %s not tapped", hook)
	}
	s.Frame(&tap.Frame{Dir: dir, Time: r.t0.Add(time.Duration(ms * float64(time.Millisecond))), Transport: tap.Stdio,
		Conn: "stdio:" + hook, Raw: []byte(raw)})
}

func (r *rig) send(hook string, ms float64, raw string) { r.at(hook, ms, tap.FromHarness, raw) }
func (r *rig) recv(hook string, ms float64, raw string) { r.at(hook, ms, tap.FromBackend, raw) }

// close ends the timeline and returns the conduct findings by rule.
func (r *rig) close() map[string][]tap.Finding {
	for _, s := range r.sessions {
		s.Close()
	}
	r.tl.Close()
	r.tl2.Close()
	key := func(fs []tap.Finding) string {
		var ks []string
		for _, f := range fs {
			ks = append(ks, fmt.Sprintf("%s %s #%d %s", f.Rule, f.Conn, f.Seq, f.Message))
		}
		return strings.Join(ks, "\n")
	}
	if a, b := key(r.found), key(r.found2); a != b {
		r.t.Errorf("the timeline fed Facts disagrees:\n direct:\n%s\n facts:\n%s", a, b)
	}
	out := map[string][]tap.Finding{}
	for _, f := range r.found {
		out[f.Rule] = append(out[f.Rule], f)
	}
	return out
}

func toolEvent(id, call, extra string) string {
	return fmt.Sprintf(`{"id":%q,"source":"urn:example:harness","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"x","version":"1"},"call":{"id":%q},"tool":{"name":"bash","input":{"command":"ls"},"origin":"native"},"path":"native"%s}`, id, call, extra)
}

func toolAfter(id, call, parent, outcome string) string {
	exec := `{"status":"executed"}`
	if outcome == "denied" {
		exec = `{"status":"skipped","reason":"policy"}`
	}
	return fmt.Sprintf(`{"id":%q,"source":"urn:example:harness","type":"tool.after","time":"2026-01-01T00:00:01Z","harness":{"name":"x","version":"1"},"parentEventId":%q,"call":{"id":%q},"tool":{"name":"bash","input":{"command":"ls"},"origin":"native"},"path":"native","outcome":%q,"execution":%s,"items":[]}`, id, parent, call, outcome, exec)
}

const toolCaps = `{"effects":["deny","allow","ask","modify","message"],"modify":{"input":{"replace":true,"merge":true}}}`

func intercept(ev, state string) string {
	st := ""
	if state != "" {
		st = `,"state":` + state
	}
	id := ev[strings.Index(ev, `"id":"`)+6:]
	id = id[:strings.Index(id, `"`)]
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"hooks/intercept","params":{"protocolVersion":"draft","event":%s,"capabilities":%s%s}}`, id, ev, toolCaps, st)
}

func observe(ev string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":%s}}`, ev)
}

func answer(id string, effects ...string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"protocolVersion":"draft","effects":[%s]}}`, id, strings.Join(effects, ","))
}

func errorAnswer(id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"error":{"code":-32603,"message":"backend down"}}`, id)
}

const deny = `{"type":"deny","reason":"no"}`

func wantOnly(t *testing.T, got map[string][]tap.Finding, rule string) {
	t.Helper()
	for r, fs := range got {
		if r != rule {
			t.Errorf("unexpected %s: %s", r, fs[0].Message)
		}
	}
	if rule != "" && len(got[rule]) == 0 {
		t.Errorf("no %s finding", rule)
	}
}

// A conforming chain: serial, in order, the observer after settlement,
// a fail-open failure continuing, then the deny of a fail-closed hook
// ending the chain with a short-circuit observe to the uncalled c, and the
// denied call's tool.after saying denied.
func TestConformingChain(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, `{"permission":"none","candidate":null}`))
	r.recv(hA, 10, answer("e1"))
	r.send(hB, 11, intercept(ev, `{"permission":"none","candidate":null}`))
	r.recv(hB, 20, answer("e1"))
	r.send(hC, 21, intercept(ev, `{"permission":"none","candidate":null}`))
	r.recv(hC, 30, answer("e1", `{"type":"ask"}`))
	r.send(hD, 31, observe(ev))

	ev2 := toolEvent("e2", "call-2", "")
	r.send(hA, 100, intercept(ev2, `{"permission":"none","candidate":null}`))
	r.recv(hA, 110, errorAnswer("e2")) // fail-open failure: continue
	r.send(hB, 111, intercept(ev2, `{"permission":"none","candidate":null}`))
	r.recv(hB, 120, answer("e2", deny))
	r.send(hC, 121, observe(ev2)) // short circuit: c is uncalled
	r.send(hD, 122, observe(ev2))
	after := toolAfter("e3", "call-2", "e2", "denied")
	r.send(hA, 130, intercept(after, ""))
	r.recv(hA, 140, answer("e3"))
	r.send(hD, 141, observe(after))
	wantOnly(t, r.close(), "")
	if cs := r.tl.Chains(); len(cs) != 3 || cs[1].Ended == "" || !strings.Contains(cs[1].Ended, "accepted deny from com.example.b") {
		t.Errorf("Chains() = %+v, want 3 chains, the second ended by b's deny", cs)
	}
}

func TestOutOfOrder(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hB, 0, intercept(ev, ""))
	r.recv(hB, 10, answer("e1"))
	r.send(hA, 11, intercept(ev, ""))
	r.recv(hA, 20, answer("e1"))
	r.send(hC, 21, intercept(ev, ""))
	r.recv(hC, 30, answer("e1"))
	got := r.close()
	wantOnly(t, got, "COND-1/order")
	if f := got["COND-1/order"][0]; f.Conn != "stdio:"+hA || f.Level != tap.Error || !strings.Contains(f.Message, "com.example.a (position 1 in hooks)") {
		t.Errorf("finding = %+v, want one on a's request naming its position", f)
	}
}

func TestConcurrentIntercepts(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, ""))
	r.send(hB, 1, intercept(ev, ""))
	r.send(hC, 2, intercept(ev, ""))
	r.recv(hA, 50, answer("e1"))
	r.recv(hB, 51, answer("e1"))
	r.recv(hC, 52, answer("e1"))
	got := r.close()
	wantOnly(t, got, "COND-1/concurrent")
	if f := got["COND-1/concurrent"][0]; f.Conn != "stdio:"+hB {
		t.Errorf("finding on %s, want on b's request (sent while a was outstanding)", f.Conn)
	}
}

func TestContinueAfterDeny(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, ""))
	r.recv(hA, 10, answer("e1", deny))
	r.send(hB, 30, intercept(ev, ""))
	r.recv(hB, 40, answer("e1"))
	got := r.close()
	wantOnly(t, got, "COND-2/after-stop")
	if f := got["COND-2/after-stop"][0]; !strings.Contains(f.Message, "accepted deny from com.example.a") {
		t.Errorf("message %q does not say what ended the chain", f.Message)
	}
}

// A fail-closed failure ends the chain: c must not get the intercept.
func TestContinueAfterFailClosed(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, ""))
	r.recv(hA, 10, answer("e1"))
	r.send(hB, 11, intercept(ev, ""))
	r.recv(hB, 20, errorAnswer("e1"))
	r.send(hC, 40, intercept(ev, ""))
	r.recv(hC, 50, answer("e1"))
	wantOnly(t, r.close(), "COND-2/after-stop")
}

// A fail-closed deadline that passes unanswered ends the chain at the
// deadline; a later intercept to c is COND-2.
func TestFailClosedDeadline(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hB, 0, intercept(ev, ""))
	r.send(hC, 1500, intercept(ev, ""))
	r.recv(hC, 1510, answer("e1"))
	got := r.close()
	if len(got["COND-2/after-stop"]) != 1 || len(got["COND-1/concurrent"]) != 0 {
		t.Errorf("findings = %v, want COND-2 only (b's deadline had passed, so not concurrent)", got)
	}
}

// The harness stops after a fail-open failure: COND-3, a warning.
func TestFailOpenStops(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, ""))
	r.recv(hA, 10, errorAnswer("e1"))
	got := r.close()
	wantOnly(t, got, "COND-3/fail-open-stopped")
	if f := got["COND-3/fail-open-stopped"][0]; f.Level != tap.Warn {
		t.Errorf("level %s, want warn", f.Level)
	}
}

func TestObserverBeforeSettlement(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, ""))
	r.send(hD, 1, observe(ev)) // while a is deciding
	r.recv(hA, 10, answer("e1"))
	r.send(hB, 11, intercept(ev, ""))
	r.recv(hB, 20, answer("e1"))
	r.send(hC, 21, intercept(ev, ""))
	r.recv(hC, 30, answer("e1"))
	got := r.close()
	wantOnly(t, got, "COND-4/observe-before-settled")
	if f := got["COND-4/observe-before-settled"][0]; f.Conn != "stdio:"+hD {
		t.Errorf("finding on %s, want on the observer's notification", f.Conn)
	}
}

// A called interceptor gets a second copy as hooks/observe: COND-6.
func TestSecondCopy(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, ""))
	r.recv(hA, 10, answer("e1", deny))
	r.send(hA, 11, observe(ev)) // a was called: no second copy
	r.send(hB, 12, observe(ev)) // b was not: the allowed short-circuit observe
	wantOnly(t, r.close(), "COND-6/second-copy")
}

func TestChainedPermission(t *testing.T) {
	for _, tc := range []struct {
		name, effects, state, rule string
	}{
		{"ask carried", `{"type":"ask"}`, `{"permission":"ask","candidate":null}`, ""},
		{"ask lost", `{"type":"ask"}`, `{"permission":"allow","candidate":null}`, "COND-5/permission"},
		{"failed answer adds nothing", "FAIL", `{"permission":"none","candidate":null}`, ""},
		{"failed answer counted", "FAIL", `{"permission":"deny","candidate":null}`, "COND-5/permission"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, threeHooks, 0)
			ev := toolEvent("e1", "call-1", "")
			r.send(hA, 0, intercept(ev, `{"permission":"none","candidate":null}`))
			if tc.effects == "FAIL" {
				r.recv(hA, 10, errorAnswer("e1"))
			} else {
				r.recv(hA, 10, answer("e1", tc.effects))
			}
			r.send(hB, 11, intercept(ev, tc.state))
			r.recv(hB, 20, answer("e1"))
			r.send(hC, 21, intercept(ev, tc.state))
			r.recv(hC, 30, answer("e1"))
			wantOnly(t, r.close(), tc.rule)
		})
	}
}

// An accepted modify(input) is what the next interceptor sees.
func TestChainedInput(t *testing.T) {
	for _, tc := range []struct {
		name, next, rule string
	}{
		{"effective input", `{"command":"ls -l"}`, ""},
		{"original input", `{"command":"ls"}`, "COND-5/input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, threeHooks, 0)
			ev := toolEvent("e1", "call-1", "")
			r.send(hA, 0, intercept(ev, ""))
			r.recv(hA, 10, answer("e1", `{"type":"modify","target":"input","operation":"replace","value":{"command":"ls -l"}}`))
			ev2 := strings.Replace(ev, `"input":{"command":"ls"}`, `"input":`+tc.next, 1)
			r.send(hB, 11, intercept(ev2, ""))
			r.recv(hB, 20, answer("e1"))
			r.send(hC, 21, intercept(ev2, ""))
			r.recv(hC, 30, answer("e1"))
			got := r.close()
			delete(got, "") // none expected; keep the check explicit
			wantOnly(t, got, tc.rule)
		})
	}
}

// A denied call that shows tool.after with outcome ok: COND-8.
func TestDeniedCallRan(t *testing.T) {
	for _, outcome := range []string{"denied", "ok"} {
		t.Run(outcome, func(t *testing.T) {
			r := newRig(t, threeHooks, 0)
			ev := toolEvent("e1", "call-1", "")
			r.send(hA, 0, intercept(ev, ""))
			r.recv(hA, 10, answer("e1", deny))
			after := toolAfter("e2", "call-1", "e1", outcome)
			r.send(hD, 20, observe(after))
			want := ""
			if outcome == "ok" {
				want = "COND-8/ran-after-deny"
			}
			wantOnly(t, r.close(), want)
		})
	}
}

func TestLineage(t *testing.T) {
	conforming := func(r *rig) {
		ev := toolEvent("e1", "call-1", "")
		r.send(hD, 0, observe(ev))
	}
	for _, tc := range []struct {
		name  string
		after string
		rule  string
	}{
		{"after matches before", toolAfter("e2", "call-1", "e1", "ok"), ""},
		{"after without before", toolAfter("e2", "call-9", "e1", "ok"), "COND-9/after-without-before"},
		{"parent is a call id", toolAfter("e2", "call-1", "call-1", "ok"), "COND-9/parent"},
		{"parent is itself", toolAfter("e2", "call-1", "e2", "ok"), "COND-9/parent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, `{"protocolVersion":"draft","hooks":[{"id":"com.example.d","transport":{"type":"stdio","command":"d","lifecycle":"persistent"},"subscriptions":[{"events":["tool.*"],"mode":"observe","content":{"default":"body"}}]}]}`, 0, hD)
			conforming(r)
			r.send(hD, 10, observe(tc.after))
			wantOnly(t, r.close(), tc.rule)
		})
	}
	t.Run("second tool.after", func(t *testing.T) {
		r := newRig(t, threeHooks, 0)
		conforming(r)
		r.send(hD, 10, observe(toolAfter("e2", "call-1", "e1", "ok")))
		r.send(hD, 20, observe(toolAfter("e3", "call-1", "e1", "ok")))
		wantOnly(t, r.close(), "COND-9/second-after")
	})
}

// Order within the clock tolerance is no finding; beyond it, it is.
func TestClockSkew(t *testing.T) {
	for _, tc := range []struct {
		name string
		gap  float64 // ms between a's answer and b's request (negative: b first)
		rule string
	}{
		{"serial", 1, ""},
		{"within tolerance", -4, ""},
		{"beyond tolerance", -6, "COND-1/concurrent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, threeHooks, DefaultSkew)
			ev := toolEvent("e1", "call-1", "")
			// Each link's frames are fed in their own order; the
			// timeline sees them merged by time, as replay merges them.
			r.send(hA, 0, intercept(ev, ""))
			if tc.gap < 0 {
				r.send(hB, 10+tc.gap, intercept(ev, ""))
				r.recv(hA, 10, answer("e1"))
			} else {
				r.recv(hA, 10, answer("e1"))
				r.send(hB, 10+tc.gap, intercept(ev, ""))
			}
			r.recv(hB, 30, answer("e1"))
			r.send(hC, 31, intercept(ev, ""))
			r.recv(hC, 40, answer("e1"))
			wantOnly(t, r.close(), tc.rule)
		})
	}
}

// A registration only partly tapped: chains that need the untapped hook
// are not judged, and NotChecked says why.
func TestPartialRegistration(t *testing.T) {
	r := newRig(t, threeHooks, 0, hA, hC, hD)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, ""))
	r.recv(hA, 10, answer("e1"))
	// b is not tapped: c's intercept might have followed b's answer.
	r.send(hC, 21, intercept(ev, ""))
	r.recv(hC, 30, answer("e1"))
	wantOnly(t, r.close(), "")
	nc := r.tl.NotChecked()
	if len(nc) == 0 || !strings.Contains(nc[0].Reason, "com.example.b") {
		t.Errorf("NotChecked() = %+v, want the COND checks with b named", nc)
	}
}

const turnReg = `{"protocolVersion":"draft","hooks":[
 {"id":"com.example.c","transport":{"type":"stdio","command":"c","lifecycle":"persistent"},"subscriptions":[
   {"events":["turn.finish.before"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-open","content":{"default":"body"}}]}]}`

func turnFinish(id string, remaining, count int) string {
	ev := fmt.Sprintf(`{"id":%q,"source":"urn:example:harness","type":"turn.finish.before","time":"2026-01-01T00:00:00Z","harness":{"name":"x","version":"1"},"turn":{"id":"t1"},"outcome":"completed","continuationCount":%d,"items":[]}`, id, count)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"hooks/intercept","params":{"protocolVersion":"draft","event":%s,"capabilities":{"effects":["flow"],"flow":{"operations":["stop","continue"],"remainingContinuations":%d,"continuationCount":%d}}}}`, id, ev, remaining, count)
}

func TestContinuationAccounting(t *testing.T) {
	for _, tc := range []struct {
		name, flow string
		next       int
		rule       string
	}{
		{"continue costs one", `{"type":"flow","operation":"continue","instruction":"go on"}`, 2, ""},
		{"continue not counted", `{"type":"flow","operation":"continue","instruction":"go on"}`, 3, "COND-7/continuations"},
		{"stop costs none", `{"type":"flow","operation":"stop","reason":"done"}`, 3, ""},
		{"stop counted", `{"type":"flow","operation":"stop","reason":"done"}`, 2, "COND-7/continuations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, turnReg, 0, hC)
			r.send(hC, 0, turnFinish("f1", 3, 0))
			r.recv(hC, 10, answer("f1", tc.flow))
			r.send(hC, 100, turnFinish("f2", tc.next, 1))
			r.recv(hC, 110, answer("f2"))
			wantOnly(t, r.close(), tc.rule)
		})
	}
}

// The timeline holds at most MaxEvents events: older ones are judged and
// forgotten, so a long session stays in bounded memory.
func TestBoundedEvents(t *testing.T) {
	doc, _, _ := tap.ParseJSON([]byte(threeHooks))
	var found []tap.Finding
	tl := New(Config{Registration: doc, Tapped: []string{hA, hB, hC, hD}, MaxEvents: 8,
		Sink: tap.SinkFunc(func(f tap.Finding) { found = append(found, f) })})
	s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: doc, HookID: hA},
		Rules: rules.Set(rules.Options{}), Watch: tl.Link(hA)})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100 {
		ev := toolEvent(fmt.Sprintf("e%d", i), fmt.Sprintf("c%d", i), "")
		s.Frame(&tap.Frame{Dir: tap.FromHarness, Time: t0.Add(time.Duration(i) * time.Second), Transport: tap.Stdio, Conn: "a", Raw: []byte(intercept(ev, ""))})
		if n := len(tl.events); n > 8 {
			t.Fatalf("after %d events the timeline holds %d, want at most 8", i+1, n)
		}
	}
	tl.Close()
	// a answered nothing and b, c never got anything: a's deadline
	// passed (fail-open) and the chain did not go on: COND-3 for each.
	if len(found) != 100 || found[0].Rule != "COND-3/fail-open-stopped" {
		t.Errorf("%d findings (first %+v), want 100 COND-3", len(found), found)
	}
}

// Exercised says which checks the judged events gave something to judge,
// and a chain lists the rules reported about its event.
func TestExercisedAndChainFindings(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, ""))
	r.recv(hA, 10, answer("e1"))
	wantOnly(t, r.close(), "")
	ex := r.tl.Exercised()
	if ex["COND-1"] != "" || ex["COND-2"] == "" || ex["COND-3"] == "" || ex["COND-7"] == "" || ex["COND-8"] == "" {
		t.Errorf("one allowed chain: Exercised() = %v, want only COND-1 (and what every chain gives) exercised", ex)
	}

	r = newRig(t, threeHooks, 0)
	r.send(hA, 0, intercept(ev, ""))
	r.recv(hA, 10, answer("e1", deny))
	r.send(hB, 20, intercept(ev, "")) // after the deny: COND-2
	r.recv(hB, 30, answer("e1"))
	r.send(hD, 31, observe(toolAfter("e2", "call-1", "e1", "denied")))
	wantOnly(t, r.close(), "COND-2/after-stop")
	ex = r.tl.Exercised()
	for _, c := range []string{"COND-1", "COND-2", "COND-6", "COND-8", "COND-9"} {
		if ex[c] != "" {
			t.Errorf("deny then a later intercept: %s not exercised: %s", c, ex[c])
		}
	}
	cs := r.tl.Chains()
	if len(cs) != 2 || strings.Join(cs[0].Findings, " ") != "COND-2/after-stop" || len(cs[1].Findings) != 0 {
		t.Errorf("Chains() = %+v, want the first with COND-2/after-stop", cs)
	}
}

// After facts were lost, the events held and those first seen soon after
// are not judged (a lost delivery must not look like a fault), and the
// summary says so; an excerpt never reports a tool.after without its
// tool.before.
func TestLostAndExcerpt(t *testing.T) {
	for _, lost := range []bool{false, true} {
		r := newRig(t, threeHooks, 0)
		ev := toolEvent("e1", "call-1", "")
		r.send(hB, 0, intercept(ev, "")) // b before a: COND-1/order
		r.recv(hB, 10, answer("e1"))
		if lost {
			r.tl.Lost()
			r.tl2.Lost()
		}
		r.send(hA, 11, intercept(ev, ""))
		r.recv(hA, 20, answer("e1"))
		got := r.close()
		if lost {
			wantOnly(t, got, "")
			if nc := r.tl.NotChecked(); len(nc) == 0 || !strings.Contains(nc[0].Reason, "lost") {
				t.Errorf("NotChecked() = %v, want the lost facts", nc)
			}
		} else {
			wantOnly(t, got, "COND-1/order")
		}
	}
	for _, excerpt := range []bool{false, true} {
		doc, _, _ := tap.ParseJSON([]byte(threeHooks))
		var found []tap.Finding
		tl := New(Config{Registration: doc, Tapped: []string{hA, hB, hC, hD}, Excerpt: excerpt,
			Sink: tap.SinkFunc(func(f tap.Finding) { found = append(found, f) })})
		s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: doc, HookID: hD},
			Rules: rules.Set(rules.Options{}), Watch: tl.Link(hD)})
		s.Frame(&tap.Frame{Dir: tap.FromHarness, Time: time.Now(), Transport: tap.Stdio, Conn: "d", Raw: []byte(observe(toolAfter("e2", "call-9", "e1", "ok")))})
		s.Close()
		tl.Close()
		if (len(found) == 0) != excerpt {
			t.Errorf("excerpt %v: findings %v", excerpt, found)
		}
	}
}

// A fail-closed interceptor that never answers: the harness gives up at
// its deadline (1 s) and sends the tool.after right then, less than the
// clock tolerance after the deadline, before the time line has settled
// the tool.before. Saying the call ran is still COND-8, once the deadline
// is judged; saying denied is conforming. An answer allowing the call just
// before the deadline, whose stamp lags the tool.after's (another link's
// clock), leaves "ok" conforming.
func TestDeniedCallRanAtTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		outcome  string
		afterAt  float64
		answerAt float64 // 0: never
		want     string
	}{{"ok", 1001, 0, "COND-8/ran-after-deny"}, {"denied", 1001, 0, ""}, {"ok", 995, 997, ""}} {
		t.Run(fmt.Sprintf("%s/%v", tc.outcome, tc.answerAt), func(t *testing.T) {
			r := newRig(t, threeHooks, DefaultSkew)
			ev := toolEvent("e1", "call-1", "")
			r.send(hB, 0, intercept(ev, ""))
			r.send(hD, tc.afterAt, observe(toolAfter("e2", "call-1", "e1", tc.outcome)))
			if tc.answerAt > 0 {
				r.recv(hB, tc.answerAt, answer("e1"))
			}
			wantOnly(t, r.close(), tc.want)
		})
	}
}

// A harness that goes on at once after a deny, within the clock
// tolerance of it: b was called more than the tolerance after a, so it
// either overlapped a's intercept or came after the deny; both are
// faults, COND-2 whichever stamp came first. Going on after an allowing
// answer is conforming however fast; a deny that came within the
// tolerance of a's deadline may have come too late for the harness (a
// fail-open timeout), after which going on is right.
func TestContinueRightAfterDeny(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answerAt float64
		effect   string
		bAt      float64
		want     string
	}{
		{"1ms after the deny", 10, deny, 11, "COND-2/after-stop"},
		{"stamped 3ms before the deny", 10, deny, 7, "COND-2/after-stop"},
		{"1ms after an allowing answer", 10, "", 11, ""},
		{"deny at the fail-open deadline", 998, deny, 999, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, threeHooks, DefaultSkew)
			ev := toolEvent("e1", "call-1", "")
			r.send(hA, 0, intercept(ev, ""))
			effects := []string{}
			if tc.effect != "" {
				effects = append(effects, tc.effect)
			}
			if tc.bAt < tc.answerAt {
				r.send(hB, tc.bAt, intercept(ev, ""))
				r.recv(hA, tc.answerAt, answer("e1", effects...))
			} else {
				r.recv(hA, tc.answerAt, answer("e1", effects...))
				r.send(hB, tc.bAt, intercept(ev, ""))
			}
			r.recv(hB, tc.bAt+20, answer("e1"))
			r.send(hC, tc.bAt+21, intercept(ev, ""))
			r.recv(hC, tc.bAt+30, answer("e1"))
			// Only b's intercept is this test's point (c's comes well
			// after the deny: COND-2 when b's is not).
			var onB []string
			for rule, fs := range r.close() {
				for _, f := range fs {
					if f.Conn == "stdio:"+hB {
						onB = append(onB, rule)
					}
				}
			}
			if strings.Join(onB, " ") != tc.want {
				t.Errorf("%s: findings on b's intercept %v, want %q", tc.name, onB, tc.want)
			}
		})
	}
}

// The next backend answers faster than the clock tolerance: a's deny and
// b's intercept all come within 5 ms of a's own intercept. b is after a
// in the hooks order, so it was called out of order, alongside a, or
// after the deny: COND-2. A b sent clearly before a is COND-1/order
// instead, not also COND-2.
func TestContinueAfterDenyFasterThanTheTolerance(t *testing.T) {
	for _, tc := range []struct {
		bAt  float64
		want string
	}{{2, "COND-2/after-stop"}, {-10, "COND-1/order"}} {
		t.Run(fmt.Sprint(tc.bAt), func(t *testing.T) {
			r := newRig(t, threeHooks, DefaultSkew)
			ev := toolEvent("e1", "call-1", "")
			if tc.bAt < 0 {
				r.send(hB, tc.bAt, intercept(ev, ""))
			}
			r.send(hA, 0, intercept(ev, ""))
			r.recv(hA, 1, answer("e1", deny))
			if tc.bAt > 0 {
				r.send(hB, tc.bAt, intercept(ev, ""))
			}
			r.recv(hB, tc.bAt+1, answer("e1"))
			got := r.close()
			wantOnly(t, got, tc.want)
		})
	}
}

// An intercept left unanswered (a silent backend, or an answer ahp-tap
// dropped on purpose): the harness gives up at the deadline (a's timeout
// is 1000 ms) and goes on at once; retries stay within the original
// deadline and keep the event id (COND-10, COND-9).
func TestUnansweredIntercept(t *testing.T) {
	ev := toolEvent("e1", "call-1", "")
	for _, tc := range []struct {
		name string
		play func(r *rig)
		rule string
	}{
		{"fail-open: next interceptor at the deadline", func(r *rig) {
			r.send(hA, 0, intercept(ev, ""))
			r.send(hB, 1002, intercept(ev, ""))
			r.recv(hB, 1010, answer("e1"))
			r.send(hC, 1011, intercept(ev, ""))
			r.recv(hC, 1020, answer("e1"))
		}, ""},
		{"fail-open: next interceptor long after the deadline", func(r *rig) {
			r.send(hA, 0, intercept(ev, ""))
			r.send(hB, 2500, intercept(ev, ""))
			r.recv(hB, 2510, answer("e1"))
			r.send(hC, 2511, intercept(ev, ""))
			r.recv(hC, 2520, answer("e1"))
		}, "COND-10/gave-up-late"},
		{"fail-closed: short-circuit observe at the deadline", func(r *rig) {
			r.send(hA, 0, intercept(ev, ""))
			r.recv(hA, 10, answer("e1"))
			r.send(hB, 11, intercept(ev, ""))
			r.send(hC, 1013, observe(ev))
			r.send(hD, 1014, observe(ev))
		}, ""},
		{"fail-closed: short-circuit observe long after the deadline", func(r *rig) {
			r.send(hA, 0, intercept(ev, ""))
			r.recv(hA, 10, answer("e1"))
			r.send(hB, 11, intercept(ev, ""))
			r.send(hC, 3000, observe(ev))
			r.send(hD, 3001, observe(ev))
		}, "COND-10/gave-up-late"},
		{"a late answer the harness waited for", func(r *rig) {
			r.send(hA, 0, intercept(ev, ""))
			r.recv(hA, 2400, answer("e1"))
			r.send(hB, 2401, intercept(ev, ""))
			r.recv(hB, 2410, answer("e1"))
			r.send(hC, 2411, intercept(ev, ""))
			r.recv(hC, 2420, answer("e1"))
		}, "COND-10/gave-up-late"},
		{"retry within the deadline", func(r *rig) {
			r.send(hA, 0, intercept(ev, ""))
			r.send(hA, 500, intercept(ev, ""))
			r.send(hB, 1001, intercept(ev, ""))
			r.recv(hB, 1010, answer("e1"))
			r.send(hC, 1011, intercept(ev, ""))
			r.recv(hC, 1020, answer("e1"))
		}, ""},
		{"retry after the deadline", func(r *rig) {
			r.send(hA, 0, intercept(ev, ""))
			r.send(hA, 1500, intercept(ev, ""))
			r.send(hB, 1600, intercept(ev, ""))
			r.recv(hB, 1610, answer("e1"))
			r.send(hC, 1611, intercept(ev, ""))
			r.recv(hC, 1620, answer("e1"))
		}, "COND-10/retry-late"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, threeHooks, 0)
			tc.play(r)
			got := r.close()
			wantOnly(t, got, tc.rule)
			if tc.rule == "COND-10/gave-up-late" && got[tc.rule][0].Level != tap.Warn {
				t.Errorf("level %s, want warn", got[tc.rule][0].Level)
			}
			if ex := r.tl.Exercised()["COND-10"]; ex != "" {
				t.Errorf("COND-10 not exercised: %s", ex)
			}
		})
	}
	t.Run("retry under a new event id", func(t *testing.T) {
		r := newRig(t, threeHooks, 0)
		r.send(hA, 0, intercept(ev, ""))
		r.send(hA, 500, intercept(toolEvent("e1-retry", "call-1", ""), ""))
		r.send(hB, 1001, intercept(ev, ""))
		r.recv(hB, 1010, answer("e1"))
		r.send(hC, 1011, intercept(ev, ""))
		r.recv(hC, 1020, answer("e1"))
		got := r.close()
		if fs := got["COND-9/second-before"]; len(fs) != 1 || fs[0].EventID != "e1-retry" || !strings.Contains(fs[0].Message, `already had tool.before "e1"`) {
			t.Errorf("findings = %v, want one COND-9/second-before on e1-retry", got)
		}
	})
	t.Run("answered in time", func(t *testing.T) {
		r := newRig(t, threeHooks, 0)
		r.send(hA, 0, intercept(ev, ""))
		r.recv(hA, 10, errorAnswer("e1"))
		r.send(hB, 3000, intercept(ev, "")) // slow, but not a deadline matter
		r.recv(hB, 3010, answer("e1"))
		r.send(hC, 3011, intercept(ev, ""))
		r.recv(hC, 3020, answer("e1"))
		wantOnly(t, r.close(), "")
		if ex := r.tl.Exercised()["COND-10"]; ex == "" {
			t.Errorf("COND-10 exercised by a chain with no unanswered intercept")
		}
	})
}

// hookFailure is a hook.failure event about parent.
func hookFailure(id, parent, backend, policy string) string {
	return fmt.Sprintf(`{"id":%q,"source":"urn:example:harness","type":"hook.failure","time":"2026-01-01T00:00:01Z","harness":{"name":"x","version":"1"},"parentEventId":%q,"failure":{"backendId":%q,"reason":"timeout","policy":%q}}`, id, parent, backend, policy)
}

// A hook.failure, when the harness sends one, names the interceptor that
// failed and its subscription's policy (COND-11, a warning); none sent
// while a tapped hook observes hook.failure is information only.
func TestHookFailure(t *testing.T) {
	reg := strings.Replace(threeHooks, `{"events":["tool.*"],"mode":"observe"`, `{"events":["tool.*","hook.failure"],"mode":"observe"`, 1)
	ev := toolEvent("e1", "call-1", "")
	chain := func(r *rig, failAt float64) {
		r.send(hA, 0, intercept(ev, ""))
		if failAt > 0 {
			r.recv(hA, failAt, errorAnswer("e1"))
		}
		r.send(hB, 1001, intercept(ev, ""))
		r.recv(hB, 1010, answer("e1"))
		r.send(hC, 1011, intercept(ev, ""))
		r.recv(hC, 1020, answer("e1"))
	}
	for _, tc := range []struct {
		name, failure string
		failAt        float64 // 0: a's answer never comes (its 1000 ms deadline passes)
		rule          string
		level         tap.Level
	}{
		{"error named rightly", hookFailure("f1", "e1", hA, "fail-open"), 10, "", 0},
		{"deadline named rightly", hookFailure("f1", "e1", hA, "fail-open"), 0, "", 0},
		{"none sent", "", 10, "COND-11/none-sent", tap.Info},
		{"another policy", hookFailure("f1", "e1", hA, "fail-closed"), 10, "COND-11/names", tap.Warn},
		{"a backend that did not fail", hookFailure("f1", "e1", hB, "fail-closed"), 10, "COND-11/names", tap.Warn},
		{"a backend never called", hookFailure("f1", "e1", "com.example.z", "fail-open"), 10, "COND-11/names", tap.Warn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, reg, 0)
			chain(r, tc.failAt)
			if tc.failure != "" {
				r.send(hD, 1002, observe(tc.failure))
			}
			got := r.close()
			if tc.failure != "" && !strings.Contains(tc.failure, `"backendId":"`+hA+`"`) {
				delete(got, "COND-11/none-sent") // a's failure was not named: so it is
			}
			wantOnly(t, got, tc.rule)
			if tc.rule != "" && got[tc.rule][0].Level != tc.level {
				t.Errorf("level %s, want %s", got[tc.rule][0].Level, tc.level)
			}
			if ex := r.tl.Exercised()["COND-11"]; ex != "" {
				t.Errorf("COND-11 not exercised: %s", ex)
			}
		})
	}
	t.Run("no observer of hook.failure", func(t *testing.T) {
		r := newRig(t, threeHooks, 0)
		chain(r, 10)
		wantOnly(t, r.close(), "")
	})
}

// An answer a stdio tap injected in the backend's place (--inject error)
// reached the harness as the request was forwarded: a harness that goes
// on to the next interceptor at once did not overlap the first, however
// late the backend's own (swallowed) answer comes; one that goes on after
// a fail-closed injected failure is COND-2.
func TestInjectedAnswerTime(t *testing.T) {
	ev := toolEvent("e1", "call-1", "")
	for _, tc := range []struct {
		name, fault string
		first       string // the hook the fault hits
		rule        string
	}{
		{"fail-open error", "error", hA, ""},
		{"fail-closed error", "error", hB, "COND-2/after-stop"},
		{"fail-open drop", "drop", hA, ""}, // no answer reached the harness: judged at the deadline
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, threeHooks, 0)
			if tc.first == hB {
				r.send(hA, 0, intercept(ev, ""))
				r.recv(hA, 5, answer("e1"))
			}
			r.send(tc.first, 10, intercept(ev, ""))
			r.sessions[tc.first].Note(tap.Note{Kind: tap.NoteInjected, Time: r.t0.Add(11 * time.Millisecond), Conn: "stdio:" + tc.first,
				Dir: tap.FromBackend, Fault: tc.fault, ID: `"e1"`})
			next := hB
			if tc.first == hB {
				next = hC
			}
			at := 20.0
			if tc.fault == "drop" {
				at = 1015 // after the 1000 ms deadline
			}
			r.send(next, at, intercept(ev, ""))
			r.recv(next, at+10, answer("e1"))
			r.recv(tc.first, 1300, answer("e1")) // the backend's own answer, swallowed
			if tc.first == hA {
				r.send(hC, at+20, intercept(ev, ""))
				r.recv(hC, at+30, answer("e1"))
			}
			wantOnly(t, r.close(), tc.rule)
		})
	}
}

// A fault the tap injected in a's place (an invalid deny, a JSON-RPC
// error) answered the harness when it was injected: the harness going on
// to b then is not concurrent with a, although a's own answer, swallowed,
// came later. Judged by that later answer it was COND-1.
func TestInjectedAnswerSettlesAtInjection(t *testing.T) {
	r := newRig(t, threeHooks, 0)
	ev := toolEvent("e1", "call-1", "")
	r.send(hA, 0, intercept(ev, `{"permission":"none","candidate":null}`))
	r.sessions[hA].Note(tap.Note{Kind: tap.NoteInjected, Time: r.t0.Add(time.Millisecond), Conn: "stdio:" + hA,
		Dir: tap.FromBackend, Fault: "invalid-deny", ID: `"e1"`})
	r.send(hB, 10, intercept(ev, `{"permission":"none","candidate":null}`))
	r.recv(hB, 20, answer("e1"))
	r.send(hC, 21, intercept(ev, `{"permission":"none","candidate":null}`))
	r.recv(hA, 25, answer("e1", deny)) // a's own answer, swallowed by the tap
	r.recv(hC, 30, answer("e1"))
	r.send(hD, 31, observe(ev))
	wantOnly(t, r.close(), "")
}
