package output

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// maxScenarioIDs bounds the injected requests a scenario tally remembers
// (the oldest are forgotten first).
const maxScenarioIDs = 4096

// scenarioTally keeps, per --inject-plan scenario (Config.Scenarios), what
// its faults did on this link: how many were injected, how often the
// harness re-sent a request a fault hit, and the findings about those
// requests. It is a sink, a recorder (the injected notes) and a watcher
// (the harness's requests), and holds at most maxScenarioIDs requests.
type scenarioTally struct {
	mu     sync.Mutex
	names  []string
	byName map[string]*scenarioState
	hit    map[string]string // conn + inject.IDKey of an injected request → scenario
	order  []string
}

type scenarioState struct {
	injected, resent int
	findings         map[string]int // by check
}

func newScenarioTally(names []string) *scenarioTally {
	t := &scenarioTally{names: names, byName: map[string]*scenarioState{}, hit: map[string]string{}}
	for _, n := range names {
		t.byName[n] = &scenarioState{findings: map[string]int{}}
	}
	return t
}

func hitKey(conn, idKey string) string { return conn + "\x00" + idKey }

// note takes an injected note.
func (t *scenarioTally) note(n tap.Note) {
	if n.Kind != tap.NoteInjected || n.Scenario == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.byName[n.Scenario]
	if st == nil {
		return
	}
	st.injected++
	k := hitKey(n.Conn, inject.IDKey(json.RawMessage(n.ID)))
	if _, ok := t.hit[k]; !ok {
		t.order = append(t.order, k)
		if len(t.order) > maxScenarioIDs {
			delete(t.hit, t.order[0])
			t.order = t.order[1:]
		}
	}
	t.hit[k] = n.Scenario
}

// Write takes a finding: one about a request a fault hit counts for its
// scenario.
func (t *scenarioTally) Write(f tap.Finding) {
	if f.RPCID == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if name, ok := t.hit[hitKey(f.Conn, inject.IDKey(json.RawMessage(f.RPCID)))]; ok {
		t.byName[name].findings[f.Check]++
	}
}

// Judged counts the harness re-sending a request a fault hit.
func (t *scenarioTally) Judged(f *tap.Frame, x *tap.Exchange) {
	if f == nil || f.Dir != tap.FromHarness || x == nil {
		return
	}
	if _, ok := f.Msg.(*tap.Request); !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if name, ok := t.hit[hitKey(f.Conn, x.Key)]; ok {
		t.byName[name].resent++
	}
}

// summary is the tally, in the plan's order.
func (t *scenarioTally) summary() []report.Scenario {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []report.Scenario
	for _, n := range t.names {
		st := t.byName[n]
		sc := report.Scenario{Name: n, Injected: st.injected, Resent: st.resent}
		for c, k := range st.findings {
			sc.Findings = append(sc.Findings, report.CheckN{Check: c, N: k})
		}
		slices.SortFunc(sc.Findings, func(a, b report.CheckN) int { return strings.Compare(a.Check, b.Check) })
		out = append(out, sc)
	}
	return out
}

// tallyRecorder hands every note to the tally, then to next (nil: none).
type tallyRecorder struct {
	next  tap.Recorder
	tally *scenarioTally
}

func (r tallyRecorder) Record(f *tap.Frame) {
	if r.next != nil {
		r.next.Record(f)
	}
}

func (r tallyRecorder) RecordNote(n tap.Note) {
	r.tally.note(n)
	if r.next != nil {
		r.next.RecordNote(n)
	}
}
