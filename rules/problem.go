package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"fmt"
	"slices"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A problem is one shape violation found inside a value by an analysis
// that several rules share (the shape walk, the edit evaluation). The
// rules reading the analysis turn problems into findings, each rule those
// of its own check.
type problem struct {
	check vocab.CheckID // catalogue ID the problem belongs to
	ptr   string        // JSON Pointer into the frame
	msg   string        // one sentence naming the field and what was expected
	older olderDraft    // the earlier draft this shape matches, if any (hint)
}

// problemAnalysis declares an analysis that files problems under the
// given checks (see tap.Analysis). A problem under any other check is an
// ahp-tap bug: it panics, and the engine reports it as TAP-2 instead of
// dropping it without a word.
func problemAnalysis(name string, checks []vocab.CheckID, requires []*tap.Analysis, run func(c *tap.Conversation, f *tap.Frame) []problem) *tap.Analysis {
	return &tap.Analysis{Name: name, Checks: checks, Requires: requires, Run: func(c *tap.Conversation, f *tap.Frame) any {
		ps := run(c, f)
		for _, p := range ps {
			if !slices.Contains(checks, p.check) {
				panic(fmt.Sprintf("rules: analysis %s filed a problem under %s, which it does not declare (at %s: %s)", name, p.check, p.ptr, p.msg))
			}
		}
		return ps
	}}
}

// problemsOf returns the problems analysis a found in the frame being
// checked.
func problemsOf(c *tap.Conversation, a *tap.Analysis) []problem {
	ps, _ := c.Result(a).([]problem)
	return ps
}

// An analysisRule reports the problems of its one check that shared
// per-frame analyses found (the shape walk, the edit evaluation), in the
// order of its analyses. Several checks read one analysis, which the
// engine runs once per frame however many of those rules are enabled.
type analysisRule struct {
	info     tap.RuleInfo
	analyses []*tap.Analysis
}

func (r analysisRule) Info() tap.RuleInfo { return r.info }

func (r analysisRule) Requires() []*tap.Analysis { return r.analyses }

func (r analysisRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	var out []tap.Finding
	for _, a := range r.analyses {
		for _, p := range problemsOf(c, a) {
			if p.check == r.info.Check {
				out = append(out, hintOlderDraft(c, r.info.At(f, 0, p.ptr, "%s", p.msg), p.older))
			}
		}
	}
	return out
}
