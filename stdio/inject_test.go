package stdio

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

func plan(t *testing.T, specs ...string) *inject.Plan {
	t.Helper()
	var fs []inject.Fault
	for _, s := range specs {
		f, err := inject.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	return inject.NewPlan(fs, "", 1)
}

// notes records the notes a session hands its recorder.
type notes struct {
	mu sync.Mutex
	ns []tap.Note
	fr []string // frames from the backend, as audited
}

func (n *notes) Record(f *tap.Frame) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if f.Dir == tap.FromBackend {
		n.fr = append(n.fr, string(f.Raw))
	}
}

func (n *notes) RecordNote(x tap.Note) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ns = append(n.ns, x)
}

func (n *notes) kinds(k tap.NoteKind) (out []tap.Note) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range n.ns {
		if x.Kind == k {
			out = append(out, x)
		}
	}
	return out
}

// TestInjectOffPath: without a plan the plain copy loops forward (no
// injecting loop starts); with a plan that selects nothing the injecting
// loops run and still forward every input byte for byte.
func TestInjectOffPath(t *testing.T) {
	e2e.Only(t) // a slow case (internal/e2e): CI runs it
	before := injectLoops.Load()
	cfg, _ := audited(helperConfig("cat"), "")
	in := uglyInputs["many short lines"]
	if _, out := run(t, cfg, bytes.NewReader(in)); !bytes.Equal(out, in) {
		t.Fatal("not forwarded exactly")
	}
	if n := injectLoops.Load() - before; n != 0 {
		t.Fatalf("%d injecting loops ran without --inject", n)
	}
	for name, in := range uglyInputs {
		t.Run(name, func(t *testing.T) {
			cfg, _ := audited(helperConfig("cat"), "")
			cfg.Inject, cfg.Hash = plan(t, "drop,id=never-sent"), true
			before := injectLoops.Load()
			res, out := run(t, cfg, bytes.NewReader(in))
			if !bytes.Equal(out, in) {
				t.Fatalf("forwarded %d bytes, want the %d given (first difference at %d)", len(out), len(in), firstDiff(out, in))
			}
			if res.Harness.Bytes != int64(len(in)) || res.Backend.Bytes != int64(len(in)) {
				t.Errorf("Bytes = %d/%d, want %d", res.Harness.Bytes, res.Backend.Bytes, len(in))
			}
			if n := injectLoops.Load() - before; n != 2 {
				t.Errorf("%d injecting loops ran with --inject, want 2", n)
			}
		})
	}
}

func interceptLine(id string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
		`","type":"tool.before"},"capabilities":{"effects":["deny"]}}}` + "\n"
}

// TestInjectAnswersInBackendsPlace: the selected request gets the tap's
// answer, the backend's own is swallowed (audited as the backend sent it,
// and noted), the others pass unchanged.
func TestInjectAnswersInBackendsPlace(t *testing.T) {
	for _, spec := range []string{"error=-32000,id=evt_1", "invalid-deny,id=evt_1", "malformed,id=evt_1", "unadvertised-effect,id=evt_1", "drop,id=evt_1"} {
		t.Run(spec, func(t *testing.T) {
			rec := &notes{}
			sink := &findings{}
			cfg := helperConfig("echoid")
			cfg.Session = tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}), Sink: sink, Recorder: rec})
			cfg.Inject = plan(t, spec)
			_, out := run(t, cfg, strings.NewReader(interceptLine("evt_1")+interceptLine("evt_2")))
			real2 := `{"jsonrpc":"2.0","id":"evt_2","result":{"protocolVersion":"draft","effects":[]}}` + "\n"
			real1 := strings.ReplaceAll(real2, "evt_2", "evt_1")
			if !strings.Contains(string(out), real2) {
				t.Errorf("evt_2's answer not forwarded unchanged: %q", out)
			}
			if strings.Contains(string(out), real1) {
				t.Errorf("the backend's answer to evt_1 reached the harness: %q", out)
			}
			f, _ := inject.Parse(spec)
			r, _ := inject.Decode([]byte(interceptLine("evt_1")))
			if a := inject.Answer(f, r); a != nil && !strings.Contains(string(out), string(a)+"\n") {
				t.Errorf("the synthesized answer %s is not in %q", a, out)
			}
			if inj := rec.kinds(tap.NoteInjected); len(inj) != 1 || inj[0].ID != `"evt_1"` || !strings.Contains(inj[0].Detail, inject.Notice) {
				t.Errorf("injected notes %+v", inj)
			}
			if sw := rec.kinds(tap.NoteSwallowed); len(sw) != 1 || sw[0].ID != `"evt_1"` {
				t.Errorf("swallowed notes %+v", sw)
			}
			rec.mu.Lock()
			audited := strings.Join(rec.fr, "\n")
			rec.mu.Unlock()
			if !strings.Contains(audited, strings.TrimSuffix(real1, "\n")) || strings.Contains(audited, "injected by ahp-tap") {
				t.Errorf("the audit did not see the backend's own answers only: %s", audited)
			}
			sink.mu.Lock()
			for _, f := range sink.fs {
				if f.Dir == tap.FromBackend || f.Binds == tap.FromBackend {
					t.Errorf("a finding about the backend for a synthetic answer: %s", f.String())
				}
			}
			sink.mu.Unlock()
		})
	}
}

// TestInjectDelayHoldsTheAnswer: a delayed answer still reaches the
// harness whole (after the next one), and nothing is swallowed.
func TestInjectDelayHoldsTheAnswer(t *testing.T) {
	rec := &notes{}
	cfg := helperConfig("echoid")
	cfg.Session = tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}), Sink: &findings{}, Recorder: rec})
	cfg.Inject = plan(t, "delay=300ms,id=evt_1")
	_, out := run(t, cfg, strings.NewReader(interceptLine("evt_1")+interceptLine("evt_2")))
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct{ ID string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line that is not whole JSON reached the harness: %q", line)
		}
		ids = append(ids, m.ID)
	}
	if len(ids) != 2 || ids[0] != "evt_2" || ids[1] != "evt_1" {
		t.Errorf("answers reached the harness in the order %v, want [evt_2 evt_1]", ids)
	}
	if len(rec.kinds(tap.NoteInjected)) != 1 || len(rec.kinds(tap.NoteSwallowed)) != 0 {
		t.Errorf("notes %+v", rec.ns)
	}
}
