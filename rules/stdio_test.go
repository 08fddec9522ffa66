package rules

import (
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

const (
	stdioIntercept  = `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"}},"capabilities":{"effects":["deny"]}}}`
	stdioIntercept2 = `{"jsonrpc":"2.0","id":"e2","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e2","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"}},"capabilities":{"effects":["deny"]}}}`
	stdioObserve    = `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":{"id":"o1","source":"urn:x","type":"tool.after","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"}}}}`
	stdioAnswer1    = `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`
	stdioAnswer2    = `{"jsonrpc":"2.0","id":"e2","result":{"protocolVersion":"draft","effects":[]}}`
)

// lines cuts a stdio stream from one side into frames, as the tap does.
func lines(dir tap.Direction, stream string) []*tap.Frame {
	fs := StreamFrames([]byte(stream), dir)
	for _, f := range fs {
		f.Time = time.Unix(0, 0)
	}
	return fs
}

func stdioConfig(lifecycle string) tap.Config {
	return tap.Config{Transport: tap.Stdio, Lifecycle: lifecycle}
}

func TestFramingRule(t *testing.T) {
	rs := framingRules()
	cases := []struct {
		name   string
		dir    tap.Direction
		stream string
		want   int // STDIO-1 findings
	}{
		{"one message per line", tap.FromHarness, stdioIntercept + "\n" + stdioObserve + "\n", 0},
		{"response on stdout", tap.FromBackend, stdioAnswer1 + "\n", 0},
		{"banner on stdout", tap.FromBackend, "Policy server v1.2 starting\n" + stdioAnswer1 + "\n", 1},
		{"banner and log lines are one run", tap.FromBackend, "starting\nlistening\nready\n" + stdioAnswer1 + "\n", 1},
		{"two separate log lines", tap.FromBackend, "starting\n" + stdioAnswer1 + "\nbye\n", 2},
		{"pretty-printed object", tap.FromHarness, "{\n  \"jsonrpc\": \"2.0\",\n  \"a\": [\n    \"deny\"\n  ]\n}\n" + stdioObserve + "\n", 1},
		{"final line without newline", tap.FromBackend, stdioAnswer1, 1},
		{"empty line", tap.FromHarness, stdioIntercept + "\n\n", 1},
		{"request on backend stdout", tap.FromBackend, stdioIntercept + "\n", 1},
		{"garbage from the harness", tap.FromHarness, "\x00\xff garbage\n", 1},
		{"bracketed log lines are separate faults", tap.FromBackend, "[debug] a\n" + stdioAnswer1 + "\n[debug] b\n" + stdioAnswer1 + "\n", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := runRules(stdioConfig(""), rs, lines(tc.dir, tc.stream)...)
			got := 0
			for _, f := range withCheck(fs, "STDIO-1") {
				if f.Level == tap.Error {
					got++
				}
			}
			if got != tc.want {
				t.Errorf("STDIO-1 error findings = %d, want %d:%s", got, tc.want, dump(fs))
			}
		})
	}
}

func TestFramingCRLFIsAWarning(t *testing.T) {
	fs := runRules(stdioConfig(""), framingRules(), lines(tap.FromHarness, stdioIntercept+"\r\n")...)
	wantFindings(t, fs, "STDIO-1", 1)
	if len(fs) == 1 && fs[0].Level != tap.Warn {
		t.Errorf("CRLF finding level = %v, want warn", fs[0].Level)
	}
	fs = runRules(stdioConfig(""), framingRules(), lines(tap.FromHarness, stdioIntercept+"\n")...)
	wantFindings(t, fs, "STDIO-1", 0)
}

// stdioRun feeds harness and backend frames in the given order, then notes.
type step struct {
	dir  tap.Direction
	line string
	note *tap.Note
}

func runSteps(cfg tap.Config, steps ...step) []tap.Finding {
	e := tap.NewEngine(cfg, framingRules())
	var out []tap.Finding
	for _, s := range steps {
		if s.note != nil {
			out = append(out, e.Note(*s.note)...)
			continue
		}
		for _, f := range lines(s.dir, s.line+"\n") {
			out = append(out, e.Feed(f)...)
		}
	}
	return append(out, e.Finish()...)
}

func eof(dir tap.Direction) step { return step{note: &tap.Note{Kind: tap.NoteEOF, Dir: dir}} }
func exit(code int, sig string) step {
	return step{note: &tap.Note{Kind: tap.NoteExit, ExitCode: code, Signal: sig}}
}
func h(line string) step { return step{dir: tap.FromHarness, line: line} }
func b(line string) step { return step{dir: tap.FromBackend, line: line} }

func TestPerEventRule(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
		want  int
	}{
		{"one intercept, one answer, exit 0", []step{h(stdioIntercept), eof(tap.FromHarness), b(stdioAnswer1), eof(tap.FromBackend), exit(0, "")}, 0},
		{"observe, no answer, exit 0", []step{h(stdioObserve), eof(tap.FromHarness), eof(tap.FromBackend), exit(0, "")}, 0},
		{"observe, nonzero exit is only logged", []step{h(stdioObserve), eof(tap.FromHarness), exit(3, "")}, 0},
		{"two messages to one process", []step{h(stdioIntercept), h(stdioIntercept2), eof(tap.FromHarness), b(stdioAnswer1), exit(0, "")}, 1},
		{"two answers", []step{h(stdioIntercept), eof(tap.FromHarness), b(stdioAnswer1), b(stdioAnswer1), exit(0, "")}, 1},
		{"answer to a notification", []step{h(stdioObserve), eof(tap.FromHarness), b(stdioAnswer1), exit(0, "")}, 1},
		{"nonzero exit after intercept", []step{h(stdioIntercept), eof(tap.FromHarness), b(stdioAnswer1), exit(1, "")}, 1},
		{"crash after intercept", []step{h(stdioIntercept), eof(tap.FromHarness), exit(-1, "SIGSEGV")}, 1},
		{"exit 0 without answer", []step{h(stdioIntercept), eof(tap.FromHarness), exit(0, "")}, 1},
		{"EOF without a message", []step{eof(tap.FromHarness), exit(0, "")}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := runSteps(stdioConfig("per_event"), tc.steps...)
			got := 0
			for _, f := range withCheck(fs, "STDIO-2") {
				if f.Level >= tap.Warn {
					got++
				}
			}
			if got != tc.want {
				t.Errorf("STDIO-2 findings = %d, want %d:%s", got, tc.want, dump(fs))
			}
			// Without the lifecycle, nothing is assumed.
			wantFindings(t, runSteps(stdioConfig(""), tc.steps...), "STDIO-2", 0)
		})
	}
}

func TestPersistentRule(t *testing.T) {
	serial := []step{h(stdioIntercept), b(stdioAnswer1), h(stdioIntercept2), b(stdioAnswer2)}
	overlap := []step{h(stdioIntercept), h(stdioIntercept2), b(stdioAnswer1), b(stdioAnswer2)}
	wantFindings(t, runSteps(stdioConfig("persistent"), serial...), "STDIO-3", 0)
	wantFindings(t, runSteps(stdioConfig("persistent"), overlap...), "STDIO-3", 1)
	wantFindings(t, runSteps(stdioConfig("per_event"), overlap...), "STDIO-3", 0)
	wantFindings(t, runSteps(stdioConfig(""), overlap...), "STDIO-3", 0)
	// An observe while an intercept is outstanding is fine.
	wantFindings(t, runSteps(stdioConfig("persistent"), h(stdioIntercept), h(stdioObserve), b(stdioAnswer1)), "STDIO-3", 0)
}

// An answer ahp-tap sent in the backend's place (--inject error, …)
// answered the harness: its next intercept is not a second one
// outstanding, whenever the backend's swallowed answer comes. A dropped
// answer (the harness got none) answers nothing.
func TestPersistentRuleInjectedAnswer(t *testing.T) {
	injected := func(fault string) step {
		return step{note: &tap.Note{Kind: tap.NoteInjected, Dir: tap.FromBackend, Fault: fault, ID: `"e1"`}}
	}
	for _, tc := range []struct {
		fault string
		want  int
	}{{"error", 0}, {"invalid-deny", 0}, {"drop", 1}, {"delay", 1}} {
		steps := []step{h(stdioIntercept), injected(tc.fault), h(stdioIntercept2), b(stdioAnswer1), b(stdioAnswer2)}
		if fs := withCheck(runSteps(stdioConfig("persistent"), steps...), "STDIO-3"); len(fs) != tc.want {
			t.Errorf("--inject %s: %d STDIO-3 findings, want %d:%s", tc.fault, len(fs), tc.want, dump(fs))
		}
	}
}

func TestPersistentRuleFromRegistration(t *testing.T) {
	reg, _, err := tap.ParseJSON([]byte(`{"protocolVersion":"draft","hooks":[{"id":"com.example.p","transport":{"type":"stdio","command":"x","lifecycle":"persistent"},"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":500,"failurePolicy":"fail-open","content":{"default":"metadata"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := tap.Config{Transport: tap.Stdio, Registration: reg, HookID: "com.example.p"}
	wantFindings(t, runSteps(cfg, h(stdioIntercept), h(stdioIntercept2)), "STDIO-3", 1)
}
