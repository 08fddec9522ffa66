package replay

import (
	"encoding/json"
	"slices"

	"github.com/ahp-tap/ahp-tap/conduct"
	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// maxScenarioEvents bounds the events remembered per scenario, and
// maxScenarioHits the injected requests remembered in all.
const (
	maxScenarioEvents = 16
	maxScenarioHits   = 4096
)

// scenarios collects, while the captures feed the conduct timeline, which
// --inject-plan scenario's fault hit which request and event (the
// captures' injected notes), so that replay --conduct can say per
// scenario what the harness did and the conduct verdict.
type scenarios struct {
	order  []string
	by     map[string]*scenario
	hit    map[string]string // conn + inject.IDKey → scenario
	nhits  int
	events map[string]string // event id → scenario
}

type scenario struct {
	injected int
	events   []string
}

func newScenarios() *scenarios {
	return &scenarios{by: map[string]*scenario{}, hit: map[string]string{}, events: map[string]string{}}
}

func (s *scenarios) Record(*tap.Frame) {}

// RecordNote takes an injected note naming its scenario.
func (s *scenarios) RecordNote(n tap.Note) {
	if n.Kind != tap.NoteInjected || n.Scenario == "" {
		return
	}
	sc := s.by[n.Scenario]
	if sc == nil {
		sc = &scenario{}
		s.by[n.Scenario] = sc
		s.order = append(s.order, n.Scenario)
	}
	sc.injected++
	if s.nhits < maxScenarioHits {
		s.hit[n.Conn+"\x00"+inject.IDKey(json.RawMessage(n.ID))] = n.Scenario
		s.nhits++
	}
}

// Judged names the event of a request a fault hit, once its exchange
// ends (the injected note comes after the request).
func (s *scenarios) Judged(f *tap.Frame, x *tap.Exchange) {
	if x == nil || x.Injected == "" || x.Event == nil {
		return
	}
	if _, ok := f.Msg.(*tap.Response); !ok {
		return
	}
	name, ok := s.hit[f.Conn+"\x00"+x.Key]
	if !ok {
		return
	}
	id, _ := x.Event.Get("id").Text()
	sc := s.by[name]
	if id == "" || slices.Contains(sc.events, id) || len(sc.events) >= maxScenarioEvents {
		return
	}
	sc.events = append(sc.events, id)
	s.events[id] = name
}

// judge is, per scenario, the events its faults hit, the chain of the
// first, and the conduct findings about them.
func (s *scenarios) judge(findings []tap.Finding, chains []conduct.Chain) []report.ConductScenario {
	var out []report.ConductScenario
	for _, name := range s.order {
		sc := s.by[name]
		cs := report.ConductScenario{Name: name, Injected: sc.injected, Events: sc.events}
		for _, c := range chains {
			if len(sc.events) > 0 && c.EventID == sc.events[0] {
				cs.Harness = report.ChainText(c)
			}
		}
		for _, f := range findings {
			if s.events[f.EventID] == name && !slices.Contains(cs.Verdict, f.Rule) {
				cs.Verdict = append(cs.Verdict, f.Rule)
			}
		}
		out = append(out, cs)
	}
	return out
}

// watchers hands each judged frame to each of ws.
type watchers []tap.Watcher

func (ws watchers) Judged(f *tap.Frame, x *tap.Exchange) {
	for _, w := range ws {
		w.Judged(f, x)
	}
}
