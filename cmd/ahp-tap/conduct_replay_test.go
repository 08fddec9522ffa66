package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/tap"
)

// twoHooks is a registration of two interceptors of tool.before, a then
// b, both fail-closed.
const twoHooks = `{"protocolVersion":"draft","hooks":[
 {"id":"com.example.a","transport":{"type":"stdio","command":"a","lifecycle":"persistent"},"subscriptions":[
   {"events":["tool.before"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-closed","content":{"default":"body"}}]},
 {"id":"com.example.b","transport":{"type":"stdio","command":"b","lifecycle":"persistent"},"subscriptions":[
   {"events":["tool.before"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-closed","content":{"default":"body"}}]}]}`

// linkFrame is one frame of a hand-written link capture, at ms after t0.
type linkFrame struct {
	ms  float64
	dir tap.Direction
	raw string
}

var conductT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// writeLinkCapture writes the capture of hook's link as the stdio tap
// does (header naming the hook and embedding the registration).
func writeLinkCapture(t *testing.T, dir, hook, reg string, frames ...linkFrame) string {
	t.Helper()
	p := filepath.Join(dir, hook+".capture")
	conn := "stdio:" + hook
	w, err := capture.Create(p, capture.Header{Tool: "test", Snapshot: "draft", Transport: tap.Stdio, Started: conductT0,
		Conn: conn, Hook: hook, Lifecycle: "persistent", RegistrationDoc: json.RawMessage(reg)})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		w.Record(&tap.Frame{Seq: uint64(i + 1), Dir: f.dir, Time: conductT0.Add(time.Duration(f.ms * float64(time.Millisecond))),
			Transport: tap.Stdio, Conn: conn, Raw: []byte(f.raw), Framing: tap.Framing{Line: true}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func conductEvent(id string) string {
	return fmt.Sprintf(`{"id":%q,"source":"urn:example:harness","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"x","version":"1"},"call":{"id":"call-%s"},"tool":{"name":"bash","input":{"command":"ls"},"origin":"native"},"path":"native"}`, id, id)
}

func conductIntercept(id string) linkFrame {
	return linkFrame{dir: tap.FromHarness, raw: fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"hooks/intercept","params":{"protocolVersion":"draft","event":%s,"capabilities":{"effects":["deny","allow","ask"]}}}`, id, conductEvent(id))}
}

func conductAnswer(id string, effects string) linkFrame {
	return linkFrame{dir: tap.FromBackend, raw: fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"protocolVersion":"draft","effects":[%s]}}`, id, effects)}
}

func at(ms float64, f linkFrame) linkFrame { f.ms = ms; return f }

// conductChecks runs replay --format json and returns the COND findings'
// rule IDs and the not-checked lines.
func replayConduct(t *testing.T, args ...string) (rules []string, notChecked string, r result) {
	t.Helper()
	r = runTap(t, "", append([]string{"replay", "--format", "json"}, args...)...)
	if r.code == 2 {
		t.Fatalf("replay: exit 2: %s", r.stderr)
	}
	var doc struct {
		Findings []struct{ Check, Rule, Message string }
		Summary  struct {
			NotPossible []struct{ Check, Reason string } `json:"notPossible"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("replay --format json: %v\n%s", err, r.stdout)
	}
	for _, f := range doc.Findings {
		if strings.HasPrefix(f.Check, "COND-") {
			rules = append(rules, f.Rule)
		}
	}
	for _, n := range doc.Summary.NotPossible {
		if strings.HasPrefix(n.Check, "COND-") {
			notChecked += n.Check + ": " + n.Reason + "\n"
		}
	}
	// The run-wide summary lists a check only when no input could make it
	// (a single link covers COND as not exercised); the conduct input's
	// status in JUnit says what the timeline could not check.
	junit := filepath.Join(t.TempDir(), "r.xml")
	runTap(t, "", append([]string{"replay", "--report", "junit=" + junit}, args...)...)
	data, _ := os.ReadFile(junit)
	for _, m := range regexp.MustCompile(`(COND-[0-9]+)[^>]*>\s*<skipped message="not checked: ([^"]*)"`).FindAllStringSubmatch(string(data), -1) {
		notChecked += m[1] + " (" + m[2] + ")\n"
	}
	return rules, notChecked, r
}

// The captures of two links replayed together: a conforming chain (a
// allows, then b) gives no conduct finding; b before a is COND-1; b after
// a's deny is COND-2. A directory of captures is the same as its files.
func TestReplayConductTwoLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a, b []linkFrame
		want string
	}{
		{"conforming", []linkFrame{at(0, conductIntercept("e1")), at(10, conductAnswer("e1", ""))},
			[]linkFrame{at(11, conductIntercept("e1")), at(20, conductAnswer("e1", ""))}, ""},
		{"out of order", []linkFrame{at(30, conductIntercept("e1")), at(40, conductAnswer("e1", ""))},
			[]linkFrame{at(0, conductIntercept("e1")), at(20, conductAnswer("e1", ""))}, "COND-1/order"},
		{"after deny", []linkFrame{at(0, conductIntercept("e1")), at(10, conductAnswer("e1", `{"type":"deny","reason":"no"}`))},
			[]linkFrame{at(30, conductIntercept("e1")), at(40, conductAnswer("e1", ""))}, "COND-2/after-stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeLinkCapture(t, dir, "com.example.a", twoHooks, tc.a...)
			writeLinkCapture(t, dir, "com.example.b", twoHooks, tc.b...)
			for _, args := range [][]string{
				{filepath.Join(dir, "com.example.a.capture"), filepath.Join(dir, "com.example.b.capture")},
				{dir},
			} {
				got, nc, _ := replayConduct(t, args...)
				if strings.Join(got, " ") != tc.want {
					t.Errorf("replay %v: conduct findings %v, want %q", args, got, tc.want)
				}
				if nc != "" {
					t.Errorf("not checked with both links: %s", nc)
				}
			}
		})
	}
}

// Clock skew: the taps of one host stamp frames with one clock after a
// scheduling delay. b's intercept stamped 3 ms before a's answer (within
// the 5 ms tolerance) is no finding; 20 ms before is COND-1 (concurrent);
// --conduct-skew 30ms accepts that too.
func TestReplayConductSkew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		early float64
		flags []string
		want  string
	}{
		{3, nil, ""},
		{20, nil, "COND-1/concurrent"},
		{20, []string{"--conduct-skew", "30ms"}, ""},
	} {
		dir := t.TempDir()
		writeLinkCapture(t, dir, "com.example.a", twoHooks, at(0, conductIntercept("e1")), at(50, conductAnswer("e1", "")))
		writeLinkCapture(t, dir, "com.example.b", twoHooks, at(50-tc.early, conductIntercept("e1")), at(60, conductAnswer("e1", "")))
		got, _, _ := replayConduct(t, append(tc.flags, dir)...)
		if strings.Join(got, " ") != tc.want {
			t.Errorf("b %v ms early %v: conduct findings %v, want %q", tc.early, tc.flags, got, tc.want)
		}
	}
}

// Only one link of a two-hook registration: the chains that need the
// other are not judged, and the summary says which hook is missing; a
// capture that names no hook cannot be placed at all.
func TestReplayConductPartial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeLinkCapture(t, dir, "com.example.a", twoHooks, at(0, conductIntercept("e1")), at(10, conductAnswer("e1", "")))
	got, nc, _ := replayConduct(t, "--conduct", "on", a)
	if len(got) != 0 {
		t.Errorf("partial: findings %v", got)
	}
	if !strings.Contains(nc, "COND-1 (") || !strings.Contains(nc, "com.example.b") {
		t.Errorf("partial: not checked lines %q, want COND-1 naming com.example.b", nc)
	}
	// Both links: nothing is left unchecked.
	b := writeLinkCapture(t, dir, "com.example.b", twoHooks, at(11, conductIntercept("e1")), at(20, conductAnswer("e1", "")))
	if _, nc, _ := replayConduct(t, a, b); nc != "" {
		t.Errorf("both links: not checked %q", nc)
	}
	// A capture without a hook in its header, with --conduct on.
	raw, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	nohook := writeFile(t, "nohook.capture", strings.Replace(string(raw), `"hook":"com.example.a",`, "", 1))
	if _, nc, _ := replayConduct(t, "--conduct", "on", nohook); !strings.Contains(nc, "names no hook") {
		t.Errorf("no hook: not checked %q", nc)
	}
	if r := runTap(t, "", "replay", "--conduct", "sometimes", a); r.code != 2 {
		t.Errorf("--conduct sometimes: exit %d", r.code)
	}
	if r := runTap(t, "", "replay", t.TempDir()); r.code != 2 || !strings.Contains(r.stderr, "no capture") {
		t.Errorf("empty directory: exit %d, %s", r.code, r.stderr)
	}
}

// The reports show each event's chain: text one line per chain, JSON a
// chains list, HTML a conduct section; the harness claim counts the COND
// checks (failed with a conduct finding, passed without).
func TestReplayConductReports(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		b        []linkFrame
		comp     string // the claim's AHP-COMP-001 status
		stopped  bool
		findings string
	}{
		{"conforming", []linkFrame{at(30, linkFrame{dir: tap.FromHarness, raw: `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":` + conductEvent("e1") + `}}`})},
			"passed", true, ""},
		{"after deny", []linkFrame{at(30, conductIntercept("e1")), at(40, conductAnswer("e1", ""))}, "failed", true, "COND-2/after-stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeLinkCapture(t, dir, "com.example.a", twoHooks, at(0, conductIntercept("e1")), at(10, conductAnswer("e1", `{"type":"deny","reason":"no"}`)))
			writeLinkCapture(t, dir, "com.example.b", twoHooks, tc.b...)
			out := t.TempDir()
			r := runTap(t, "", "replay", "--claim", "role=harness,binding=stdio,profiles=base,tool-interception",
				"--report", "text", "--report", "json="+filepath.Join(out, "r.json"), "--report", "html="+filepath.Join(out, "r.html"), dir)
			if r.code == 2 {
				t.Fatalf("replay: %s", r.stderr)
			}
			line := ""
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(l, "  event tool.before e1:") {
					line = l
				}
			}
			if !strings.Contains(r.stdout, "conduct: 1 chains judged") || !strings.Contains(line, "com.example.a intercept → explicit_deny in 10ms (fail-closed)") ||
				!strings.Contains(line, "stopped: an accepted deny from com.example.a") || strings.Contains(line, "[COND") != (tc.findings != "") {
				t.Errorf("text chain view:\n%s", r.stdout)
			}
			comp := regexp.MustCompile(`AHP-COMP-001\s+(\S+)`).FindStringSubmatch(r.stdout)
			if comp == nil || comp[1] != tc.comp {
				t.Errorf("claim AHP-COMP-001 = %v, want %s:\n%s", comp, tc.comp, r.stdout)
			}
			raw, _ := os.ReadFile(filepath.Join(out, "r.json"))
			var doc struct {
				Chains []struct {
					EventID  string
					Ended    string
					Findings []string
					Steps    []struct{ Hook, Method, Outcome string }
				}
			}
			if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Chains) != 1 {
				t.Fatalf("json chains: %v %s", err, raw)
			}
			c := doc.Chains[0]
			if c.EventID != "e1" || len(c.Steps) != 2 || c.Steps[0].Hook != "com.example.a" || c.Steps[0].Outcome != "explicit_deny" ||
				c.Ended == "" || strings.Join(c.Findings, " ") != tc.findings {
				t.Errorf("json chain: %+v", c)
			}
			page, _ := os.ReadFile(filepath.Join(out, "r.html"))
			if !strings.Contains(string(page), `<section id="conduct">`) || !strings.Contains(string(page), "com.example.b: hooks/") {
				t.Errorf("html: no conduct section with com.example.b's delivery")
			}
		})
	}
}
