package replay

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/conduct"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// conductSource is the name the conduct findings of a replay are listed
// under: they are about the registration's links together, not one file.
const conductSource = "conduct"

// conductChecks are the checks of the conduct timeline.
var conductChecks = []vocab.CheckID{vocab.Cond1, vocab.Cond2, vocab.Cond3, vocab.Cond4, vocab.Cond5,
	vocab.Cond6, vocab.Cond7, vocab.Cond8, vocab.Cond9, vocab.Cond10, vocab.Cond11}

// conductResult is what judging the conduct of replayed captures gave.
type conductResult struct {
	findings    []tap.Finding
	notPossible []report.NotPossible
	chains      []conduct.Chain
	links       []string // the hooks judged together
	judged      bool     // a timeline ran
	exercised   map[string]string
	scenarios   []report.ConductScenario
}

// conductLink is one capture of the links judged together.
type conductLink struct {
	name string
	hook string
}

// judgeConduct judges how the harness dispatched across the links of one
// registration (issue 23): the captures among names whose headers name a
// hook are replayed again, merged into one time line by their frames'
// times, each segment through a session configured as its live run was,
// whose judged frames feed one conduct.Timeline. Only the timeline's
// findings are kept: each link's own were reported by the replay of its
// file. With always false, a registration of one hook is not judged.
// Captures of another registration than the first (or than
// --registration) are left out, and said so.
func (rp *Replayer) judgeConduct(names []string, skew time.Duration, always bool) conductResult {
	var res conductResult
	reg, links, why := rp.conductLinks(names)
	if !always && (reg == nil || len(reg.Get("hooks").Elems()) < 2) {
		return res // one backend: nothing across links to judge (--conduct on judges it anyway)
	}
	if len(links) == 0 {
		if len(why) > 0 {
			for _, c := range conductChecks {
				res.notPossible = append(res.notPossible, report.NotPossible{Check: string(c), Reason: why[0]})
			}
		}
		return res
	}
	var tapped []string
	for _, l := range links {
		if !slices.Contains(tapped, l.hook) {
			tapped = append(tapped, l.hook)
		}
	}
	if !always && len(tapped) < 2 {
		return res // one link: nothing across links to judge (--conduct on judges it anyway)
	}
	tl := conduct.New(conduct.Config{Registration: reg, Tapped: tapped, Skew: skew,
		Sink: tap.SinkFunc(func(f tap.Finding) { res.findings = append(res.findings, f) })})
	sc := newScenarios()
	rp.feedTimeline(tl, reg, links, sc)
	tl.Close()
	res.judged, res.links, res.chains, res.exercised = true, tapped, tl.Chains(), tl.Exercised()
	res.scenarios = sc.judge(res.findings, res.chains)
	res.notPossible = notPossible(tl.NotChecked())
	return res
}

// conductLinks finds the captures of one registration among names: the
// registration (--registration, else the first capture's), its links, and
// why captures without a hook and registration could not be links.
func (rp *Replayer) conductLinks(names []string) (reg *tap.Value, links []conductLink, why []string) {
	var regDigest string
	for _, name := range names {
		if name == "-" {
			continue
		}
		h, err := firstHeader(name)
		if err != nil || h == nil {
			continue // not a capture, or unreadable: the replay of the file said so
		}
		if h.Hook == "" || len(h.RegistrationDoc) == 0 {
			why = append(why, fmt.Sprintf("%s names no hook and registration in its header (record with --registration and --hook, as wrap does)", name))
			continue
		}
		doc, _, err := tap.ParseJSON(h.RegistrationDoc)
		if err != nil {
			continue
		}
		if reg == nil {
			reg, regDigest = doc, doc.Digest()
			if r := rp.Config.Registration; r != nil && rp.Set["registration"] {
				reg, regDigest = r, r.Digest()
			}
		}
		if doc.Digest() != regDigest {
			fmt.Fprintf(rp.Diag, "ahp-tap: replay: %s is a capture of another registration; its conduct is not judged with the others\n", name)
			continue
		}
		links = append(links, conductLink{name: name, hook: h.Hook})
	}
	return reg, links, why
}

// feedTimeline replays the links' captures merged by time, one session
// per segment, each watched by the timeline.
func (rp *Replayer) feedTimeline(tl *conduct.Timeline, reg *tap.Value, links []conductLink, sc *scenarios) {
	var readers []*capture.Reader
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for _, l := range links {
		in, err := OpenInput(l.name, nil, io.Discard, false)
		if err != nil {
			fmt.Fprintf(rp.Diag, "ahp-tap: replay: %s: %v; its link is left out of the conduct timeline\n", l.name, err)
			continue
		}
		closers = append(closers, in.Close)
		cr := capture.NewReader(in.R)
		cr.Damaged = func(*capture.LineError) {} // the file's own replay reported it
		readers = append(readers, cr)
	}
	stores := capture.NewStores()
	discard := tap.SinkFunc(func(tap.Finding) {})
	err := capture.Merge(readers, func(_ int, h *capture.Header) (*tap.Session, error) {
		cfg, err := h.Config(rp.Config, OverridesOf(rp.Set))
		if err != nil {
			return nil, err
		}
		cfg.Registration, cfg.HookID = reg, h.Hook
		cfg.Events = stores.For(h)
		return tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(rp.Rules), Sink: discard,
			RegistrationReported: true, SharedEvents: h.State != "", MaxLine: MaxLine,
			Watch: watchers{tl.Link(h.Hook), sc}, Recorder: sc}), nil
	}, func(s *tap.Session) { s.Close() })
	if err != nil && !rp.Interrupted() {
		fmt.Fprintf(rp.Diag, "ahp-tap: replay: conduct timeline: %v\n", err)
	}
}

// firstHeader reads the header a capture starts with (nil: not a capture).
func firstHeader(name string) (*capture.Header, error) {
	in, err := OpenInput(name, nil, io.Discard, false)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if in.Kind != capture.KindCapture {
		return nil, nil
	}
	it, err := capture.NewReader(in.R).Next()
	if err != nil {
		if errors.Is(err, capture.ErrNotCapture) {
			return nil, nil
		}
		return nil, err
	}
	return it.Header, nil
}

// Conduct judges the conduct of the replayed captures and feeds it
// to the --report run as an input of its own, with its coverage of the
// COND checks: the source of the conduct findings (nil when no timeline
// ran).
func (rp *Replayer) Conduct(names []string, skew time.Duration, always bool) *report.Source {
	if rp.Interrupted() {
		return nil
	}
	res := rp.judgeConduct(names, skew, always)
	if !res.judged && len(res.notPossible) == 0 {
		return nil
	}
	rp.Run.StartInput(conductSource)
	nc := map[string]string{}
	for _, n := range res.notPossible {
		if _, ok := nc[n.Check]; !ok {
			nc[n.Check] = n.Reason
		}
	}
	found := map[string]bool{}
	for _, f := range res.findings {
		found[f.Check] = true
	}
	for _, c := range conductChecks {
		id := string(c)
		switch {
		case found[id] || (res.judged && res.exercised[id] == ""):
			rp.Run.Cover(id, rules.Exercised, "")
		case nc[id] != "":
			rp.Run.Cover(id, rules.NotChecked, nc[id])
		default:
			rp.Run.Cover(id, rules.NotExercised, res.exercised[id])
		}
	}
	rp.Run.Chains(res.chains)
	rp.Run.Findings(res.findings)
	rp.Run.EndInput(report.InputEnd{})
	return &report.Source{Name: conductSource, Findings: res.findings, Chains: res.chains, ConductNotChecked: res.notPossible,
		Scenarios: res.scenarios}
}

// notPossible turns a timeline's NotChecked list into the report's.
func notPossible(nc []tap.NotChecked) []report.NotPossible {
	var out []report.NotPossible
	for _, n := range nc {
		out = append(out, report.NotPossible{Check: n.Check, Reason: n.Reason})
	}
	return out
}
