package examples

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// Faults are the deliberate conduct faults of `ahp-tap
// example-harness --registration FILE --fault NAME` (issue 23): each makes
// the finding of its check when the registration's backends are tapped.
var Faults = []Fault{
	{"none", "dispatch as AHP says: serial, in registration order, stop on deny or fail-closed failure, continue after a fail-open failure, short-circuit observes to uncalled interceptors (default)", "", ""},
	{"out-of-order", "run the interceptors of each event in the reverse of the registration's order", vocab.Cond1, ""},
	{"concurrent", "send each event to every interceptor at once, then read the answers", vocab.Cond1, ""},
	{"continue-after-deny", "go on to the next interceptors after an accepted deny", vocab.Cond2, ""},
	{"fail-open-stop", "end the chain at a fail-open failure instead of going on", vocab.Cond3, ""},
	{"second-copy", "after a short circuit, send the hooks/observe of the event to the called interceptors too", vocab.Cond6, ""},
	{"run-denied", "run a denied tool call anyway: its tool.after says ok and executed", vocab.Cond8, ""},
	// Needs an invalid deny to take: `ahp-tap stdio --inject invalid-deny` in front of a backend
	// (docs/inject.md); then a fail-open chain stops where it should go on (COND-3).
	{"accept-invalid-deny", "take a deny from a response AHP rejects whole (a deny beside an invalid effect) instead of failing the interceptor", "", "an invalid deny, e.g. from a tap with --inject invalid-deny"},
	// Need an intercept left unanswered, e.g. `ahp-tap stdio --inject drop` in front of a
	// persistent stdio backend (the retries are made on persistent stdio backends only).
	{"retry", "conforming: re-send an intercept not answered within half its deadline once, identical, and give up at the original deadline", "", needsUnanswered},
	{"retry-new-id", "re-send an intercept not answered within half its deadline under a new event id", vocab.Cond9, needsUnanswered},
	{"retry-late", "give up on an unanswered intercept at its deadline, then re-send it half a deadline later and wait a deadline more", vocab.Cond10, needsUnanswered},
	{"give-up-late", "wait for an unanswered intercept's answer 1.5 s and a deadline past its deadline before applying the failure policy", vocab.Cond10, needsUnanswered},
	{"timeout-allow", "take an intercept left unanswered at its deadline as allow, even under fail-closed", vocab.Cond8, needsUnanswered},
	// Need a failing interceptor and a hook observing hook.failure.
	{"no-hook-failure", "send no hook.failure after an interceptor's failure, though a hook observes hook.failure (AHP allows it: information only)", vocab.Cond11, needsHookFailure},
	{"wrong-hook-failure", "send hook.failure naming the other failure policy than the failed subscription's", vocab.Cond11, needsHookFailure},
}

// needsHookFailure is the Needs of the hook.failure faults.
const needsHookFailure = "an interceptor that fails and a hook that observes hook.failure"

// errDeadline is an intercept that got no answer within its deadline.
var errDeadline = errors.New("no response before the deadline")

// missedDeadline says whether err is an intercept's deadline passing.
func missedDeadline(err error) bool {
	return errors.Is(err, errDeadline) || errors.Is(err, context.DeadlineExceeded)
}

// A Fault is one deliberate fault of the dispatching harness and the
// check that finds it ("" for none). Needs says what the backends must do
// for the fault to show ("": nothing); without it, the harness conforms.
type Fault struct {
	Name, Help string
	Check      vocab.CheckID
	Needs      string
}

// needsUnanswered is the Needs of the deadline faults.
const needsUnanswered = "an intercept left unanswered, e.g. behind a tap with --inject drop"

// FaultHelp lists the faults, one per line, for a flag's help.
func FaultHelp() string {
	var b strings.Builder
	for _, f := range Faults {
		fmt.Fprintf(&b, "\n    %-20s %s", f.Name, f.Help)
	}
	return b.String()
}

// A dispatchHook is one backend of the registration, as the example
// harness reaches it.
type dispatchHook struct {
	id    string
	pos   int
	entry *tap.Value
	say   io.Writer

	kind      string // "stdio" or "http"
	lifecycle string // stdio: persistent or per_event
	argv      []string
	url       string

	mu    sync.Mutex // guards proc, in, lines (persistent)
	proc  *exec.Cmd
	in    io.WriteCloser
	lines chan []byte
}

// conductHarness dispatches a short session to every backend of a
// registration, with one deliberate conduct fault or none.
type conductHarness struct {
	hooks    []*dispatchHook
	fault    string
	snapshot string
	say      io.Writer
	client   *http.Client
}

// PlayConduct is `example-harness --registration FILE [--fault F]`: it
// dispatches a short session to every backend of the registration at
// regPath, as a harness does, with the deliberate fault (one of Faults)
// or none, saying what happens on say.
func PlayConduct(regPath, fault, snapshot string, say io.Writer) error {
	if !slices.ContainsFunc(Faults, func(f Fault) bool { return f.Name == fault }) {
		return fmt.Errorf("example-harness: unknown --fault %q (one of:%s)", fault, FaultHelp())
	}
	data, err := os.ReadFile(regPath)
	if err != nil {
		return fmt.Errorf("example-harness: cannot read the registration: %v", err)
	}
	doc, _, err := tap.ParseJSON(data)
	if err != nil {
		return fmt.Errorf("example-harness: the registration is not JSON: %v", err)
	}
	h := &conductHarness{fault: fault, snapshot: snapshot, say: say, client: &http.Client{}}
	for i, e := range doc.Get("hooks").Elems() {
		id, _ := e.Get("id").Text()
		dh := &dispatchHook{id: id, pos: i, entry: e, say: say}
		tr := e.Get("transport")
		dh.kind, _ = tr.Get("type").Text()
		switch dh.kind {
		case "stdio":
			cmd, _ := tr.Get("command").Text()
			dh.argv = []string{cmd}
			for _, a := range tr.Get("args").Elems() {
				s, _ := a.Text()
				dh.argv = append(dh.argv, s)
			}
			dh.lifecycle, _ = tr.Get("lifecycle").Text()
			if dh.lifecycle == "" {
				dh.lifecycle = vocab.LifecyclePersistent
			}
		case "http":
			dh.url, _ = tr.Get("url").Text()
		default:
			return fmt.Errorf("example-harness: hook %q: transport %q is neither stdio nor http", id, dh.kind)
		}
		h.hooks = append(h.hooks, dh)
	}
	if len(h.hooks) == 0 {
		return fmt.Errorf("example-harness: the registration has no hooks")
	}
	defer h.close()
	for _, ev := range conductSession(time.Now()) {
		h.event(ev)
	}
	return nil
}

// conductSession is the events the dispatching harness plays: an allowed
// call, a call the example policy denies, and their tool.after events.
func conductSession(now time.Time) []map[string]any {
	harness := map[string]any{"name": "ahp-tap-example-harness", "version": Version}
	session := map[string]any{"id": "sess_conduct_1", "cwd": "/work/project"}
	ts := func(i int) string { return now.Add(time.Duration(i) * time.Second).UTC().Format(time.RFC3339) }
	before := func(i int, call, command string) map[string]any {
		return map[string]any{"id": fmt.Sprintf("evt_conduct_%d", i), "source": harnessSource, "type": "tool.before", "time": ts(i),
			"harness": harness, "session": session, "call": map[string]any{"id": call}, "path": "native",
			"tool": map[string]any{"name": "Bash", "kind": "shell", "input": map[string]any{"command": command}, "origin": "native"}}
	}
	return []map[string]any{
		before(1, "call_1", "ls -la"),
		before(2, "call_2", "git push --force origin main"),
		before(3, "call_3", "npm test"),
	}
}

// afterOf is the tool.after event of a settled tool.before.
func afterOf(before map[string]any, denied bool) map[string]any {
	after := map[string]any{"id": fmt.Sprintf("%s_after", before["id"]), "source": before["source"], "type": "tool.after",
		"time": before["time"], "harness": before["harness"], "session": before["session"], "call": before["call"],
		"path": before["path"], "tool": before["tool"], "parentEventId": before["id"], "items": []any{},
		"outcome": "ok", "execution": map[string]any{"status": "executed"}}
	if denied {
		after["outcome"], after["execution"] = "denied", map[string]any{"status": "skipped", "reason": "policy"}
	}
	return after
}

// interceptor is one hook's intercept subscription matching an event.
type interceptor struct {
	hook    *dispatchHook
	timeout time.Duration
	policy  string
}

// answer is what one interceptor's answer meant.
type answer struct {
	what   string // for people
	deny   bool
	failed bool
}

// event dispatches one tool.before and its tool.after.
func (h *conductHarness) event(ev map[string]any) {
	typ := ev["type"].(string)
	var chain []interceptor
	for _, dh := range h.hooks {
		if s := tap.MatchSubscription(dh.entry, typ, "intercept"); s != nil {
			ms, ok := s.Get("timeoutMs").Int()
			if !ok || ms <= 0 {
				ms = 5000
			}
			p, _ := s.Get("failurePolicy").Text()
			chain = append(chain, interceptor{hook: dh, timeout: time.Duration(ms) * time.Millisecond, policy: p})
		}
	}
	if h.fault == "out-of-order" {
		slices.Reverse(chain)
	}
	called := map[*dispatchHook]bool{}
	denied, ended := false, ""
	var failures []interceptor // the interceptors that failed, for hook.failure
	if h.fault == "concurrent" {
		answers := make([]answer, len(chain))
		var wg sync.WaitGroup
		for i, ic := range chain {
			called[ic.hook] = true
			wg.Add(1)
			go func() { defer wg.Done(); answers[i] = h.intercept(ic, ev) }()
		}
		wg.Wait()
		for i, a := range answers {
			fmt.Fprintf(h.say, "harness: %s %s → %s: %s\n", typ, ev["id"], chain[i].hook.id, a.what)
			if a.deny || (a.failed && chain[i].policy == "fail-closed") {
				denied = true
			}
			if a.failed {
				failures = append(failures, chain[i])
			}
		}
	} else {
		for _, ic := range chain {
			if ended != "" && h.fault != "continue-after-deny" {
				break
			}
			called[ic.hook] = true
			a := h.intercept(ic, ev)
			fmt.Fprintf(h.say, "harness: %s %s → %s: %s\n", typ, ev["id"], ic.hook.id, a.what)
			if a.failed {
				failures = append(failures, ic)
			}
			switch {
			case a.deny:
				denied, ended = true, "denied by "+ic.hook.id
			case a.failed && ic.policy == "fail-closed":
				denied, ended = true, "fail-closed failure of "+ic.hook.id
			case a.failed && h.fault == "fail-open-stop":
				ended = "fail-open failure of " + ic.hook.id + " (wrongly ending the chain)"
			}
			if ended != "" && h.fault == "continue-after-deny" {
				ended = "" // the fault: the chain goes on
			}
		}
	}
	if ended != "" {
		fmt.Fprintf(h.say, "harness: %s %s: the chain stopped: %s\n", typ, ev["id"], ended)
	}
	// After settlement: observe subscriptions, and a best-effort
	// short-circuit observe to the interceptors never called.
	for _, dh := range h.hooks {
		own := tap.MatchSubscription(dh.entry, typ, "observe") != nil
		uncalled := tap.MatchSubscription(dh.entry, typ, "intercept") != nil && !called[dh]
		second := h.fault == "second-copy" && ended != "" && called[dh]
		if own || uncalled || second {
			h.observe(dh, ev)
		}
	}
	h.reportFailures(ev, failures)
	if typ == "tool.before" {
		after := afterOf(ev, denied && h.fault != "run-denied")
		for _, dh := range h.hooks {
			if tap.MatchSubscription(dh.entry, "tool.after", "observe") != nil {
				h.observe(dh, after)
			}
		}
	}
}

// reportFailures sends, for each interceptor that failed for ev, a
// hook.failure to every hook that observes hook.failure (AHP lets a
// harness surface an operational failure so): naming the backend, the
// failed event and the policy applied.
func (h *conductHarness) reportFailures(ev map[string]any, failures []interceptor) {
	if h.fault == "no-hook-failure" {
		return // the fault: nothing said
	}
	for i, ic := range failures {
		policy := ic.policy
		if h.fault == "wrong-hook-failure" { // the fault: the other policy
			policy = map[string]string{"fail-open": "fail-closed", "fail-closed": "fail-open"}[policy]
		}
		fe := map[string]any{"id": fmt.Sprintf("%s_failure_%d", ev["id"], i+1), "source": ev["source"], "type": "hook.failure",
			"time": ev["time"], "harness": ev["harness"], "session": ev["session"], "parentEventId": ev["id"],
			"failure": map[string]any{"backendId": ic.hook.id, "reason": "the interceptor failed operationally", "policy": policy}}
		for _, dh := range h.hooks {
			if tap.MatchSubscription(dh.entry, "hook.failure", "observe") != nil {
				h.observe(dh, fe)
			}
		}
	}
}

// message is a JSON-RPC message of the harness, one line.
func (h *conductHarness) message(method string, ev map[string]any, id bool) []byte {
	params := map[string]any{"protocolVersion": h.snapshot, "event": ev}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id {
		msg["id"] = ev["id"] // AHP-CORE-004: the JSON-RPC id is the event id
		params["capabilities"] = map[string]any{"effects": []string{"deny"}}
	}
	b, _ := json.Marshal(msg)
	return append(b, '\n')
}

// intercept sends ev to ic's backend and waits for its answer, at most
// the subscription's timeout.
func (h *conductHarness) intercept(ic interceptor, ev map[string]any) answer {
	line, err := h.send(ic, ev)
	if err != nil && missedDeadline(err) && h.fault == "timeout-allow" {
		return answer{what: "no_effect: no answer before the deadline, taken as allow (" + ic.policy + ")"}
	}
	if err != nil {
		return answer{what: "operational_failure: " + err.Error() + " (" + ic.policy + ")", failed: true}
	}
	var resp exampleResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		return answer{what: "operational_failure: the answer is not JSON (" + ic.policy + ")", failed: true}
	}
	if h.fault == "accept-invalid-deny" && resp.Result != nil {
		for _, e := range resp.Result.Effects {
			if e["type"] == "deny" { // the fault: the other effects are not validated
				return answer{what: fmt.Sprintf("explicit_deny: %v", e["reason"]), deny: true}
			}
		}
	}
	what := resp.describe(h.snapshot)
	switch {
	case strings.HasPrefix(what, "explicit_deny"):
		return answer{what: what, deny: true}
	case strings.HasPrefix(what, "operational_failure"):
		return answer{what: what + " (" + ic.policy + ")", failed: true}
	}
	return answer{what: what}
}

// send sends ev to ic's backend as hooks/intercept and returns the line of
// its answer: within the subscription's deadline, with the retry and
// deadline faults of the harness.
func (h *conductHarness) send(ic interceptor, ev map[string]any) ([]byte, error) {
	id, msg, timeout := ev["id"].(string), h.message("hooks/intercept", ev, true), ic.timeout
	dh := ic.hook
	if h.fault == "give-up-late" {
		timeout = 2*timeout + 1500*time.Millisecond // the fault: waits past the deadline
	}
	retries := h.fault == "retry" || h.fault == "retry-new-id" || h.fault == "retry-late"
	if !retries || dh.kind != "stdio" || dh.lifecycle == vocab.LifecyclePerEvent {
		return dh.call(h, msg, id, timeout)
	}
	lines, err := dh.persistent(msg)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	first := timeout / 2
	if h.fault == "retry-late" {
		first = timeout
	}
	line, err := awaitLine(lines, id, first)
	if !missedDeadline(err) {
		return line, err
	}
	if h.fault == "retry-late" {
		time.Sleep(timeout / 2) // the fault: clearly past the deadline
	}
	again, againID := msg, id
	if h.fault == "retry-new-id" {
		ev2 := maps.Clone(ev)
		againID = id + "_retry" // the fault: a retry keeps the event id
		ev2["id"] = againID
		again = h.message("hooks/intercept", ev2, true)
	}
	fmt.Fprintf(h.say, "harness: %s %s → %s: no answer after %v, re-sending it as %s\n", ev["type"], id, dh.id, time.Since(start).Round(time.Millisecond), againID)
	if lines, err = dh.persistent(again); err != nil {
		return nil, err
	}
	rest := timeout - time.Since(start) // a retry stays within the original deadline
	if h.fault == "retry-late" {
		rest = timeout // the fault: a deadline more
	}
	return awaitLine(lines, againID, rest)
}

// observe sends ev to dh as hooks/observe.
func (h *conductHarness) observe(dh *dispatchHook, ev map[string]any) {
	if err := dh.notify(h, h.message("hooks/observe", ev, false)); err != nil {
		fmt.Fprintf(h.say, "harness: hooks/observe %s to %s: %v\n", ev["id"], dh.id, err)
		return
	}
	fmt.Fprintf(h.say, "harness: %s %s → %s: observed\n", ev["type"], ev["id"], dh.id)
}

// call sends a request and returns the line of its answer.
func (dh *dispatchHook) call(h *conductHarness, msg []byte, id string, timeout time.Duration) ([]byte, error) {
	switch {
	case dh.kind == "http":
		return dh.post(h, msg, timeout)
	case dh.lifecycle == vocab.LifecyclePerEvent:
		return dh.once(msg, id, timeout)
	}
	lines, err := dh.persistent(msg)
	if err != nil {
		return nil, err
	}
	return awaitLine(lines, id, timeout)
}

// notify sends a notification.
func (dh *dispatchHook) notify(h *conductHarness, msg []byte) error {
	switch {
	case dh.kind == "http":
		_, err := dh.post(h, msg, 5*time.Second)
		return err
	case dh.lifecycle == vocab.LifecyclePerEvent:
		_, err := dh.once(msg, "", 5*time.Second)
		return err
	}
	_, err := dh.persistent(msg)
	return err
}

// persistent writes msg to the hook's one process, starting it the first
// time, and returns its lines.
func (dh *dispatchHook) persistent(msg []byte) (chan []byte, error) {
	dh.mu.Lock()
	defer dh.mu.Unlock()
	if dh.proc == nil {
		cmd := exec.Command(dh.argv[0], dh.argv[1:]...)
		cmd.Stderr = dh.say
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("cannot start %s: %v", dh.argv[0], err)
		}
		dh.proc, dh.in, dh.lines = cmd, in, make(chan []byte, 64)
		go readLines(out, dh.lines)
	}
	if _, err := dh.in.Write(msg); err != nil {
		return nil, err
	}
	return dh.lines, nil
}

// once runs one per_event process for msg: it writes msg, closes stdin
// and, for a request, waits for the answer to id.
func (dh *dispatchHook) once(msg []byte, id string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, dh.argv[0], dh.argv[1:]...)
	cmd.Stderr = dh.say
	cmd.WaitDelay = time.Second
	cmd.Stdin = bytes.NewReader(msg)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %v", dh.argv[0], err)
	}
	lines := make(chan []byte, 16)
	go readLines(out, lines)
	var line []byte
	if id != "" {
		line, err = awaitLine(lines, id, timeout)
	}
	for range lines {
	}
	cmd.Wait()
	return line, err
}

// post sends msg to an HTTP backend and returns the response body.
func (dh *dispatchHook) post(h *conductHarness, msg []byte, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dh.url, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	return body, nil
}

func readLines(r io.Reader, lines chan<- []byte) {
	defer close(lines)
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lines <- line
		}
		if err != nil {
			return
		}
	}
}

// awaitLine reads lines until the response to id, at most timeout.
func awaitLine(lines <-chan []byte, id string, timeout time.Duration) ([]byte, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case <-deadline.C:
			return nil, fmt.Errorf("%w (%v)", errDeadline, timeout)
		case line, ok := <-lines:
			if !ok {
				return nil, fmt.Errorf("the backend closed stdout")
			}
			var r struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(line, &r) == nil && r.ID == id {
				return line, nil
			}
		}
	}
}

// close ends the persistent backends: EOF on stdin, then their exit.
func (h *conductHarness) close() {
	for _, dh := range h.hooks {
		dh.mu.Lock()
		if dh.proc != nil {
			dh.in.Close()
			for range dh.lines {
			}
			dh.proc.Wait()
		}
		dh.mu.Unlock()
	}
}
