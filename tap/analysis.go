package tap

import (
	"fmt"

	"github.com/ahp-tap/ahp-tap/vocab"
)

// An Analysis is a computation over a frame that several rules read: the
// shape walk, the edit evaluation, the outcome of an exchange. Rules
// declare the analyses they read (Requirer), the engine runs each one once
// per frame, before any rule, in an order that puts every analysis after
// those it Requires, and rules read the result with Conversation.Result.
// So no rule computes something for another, no rule depends on the order
// of the rules, and no cache is keyed by a frame.
//
// Analyses are package-level values, shared by every engine; they keep
// per-conversation state, when they need any, in Conversation.RuleState
// under their Name.
type Analysis struct {
	// Name identifies the analysis in TAP-2 findings and panics.
	Name string
	// Requires lists the analyses whose results Run reads.
	Requires []*Analysis
	// Checks lists the catalogue checks the analysis files problems
	// under, for rules to report; VerifyAnalyses makes sure a rule
	// reading the analysis reports each of them.
	Checks []vocab.CheckID
	// Run computes the result for frame f (the conversation has
	// correlated f already: c.Exchange, c.Correlation).
	Run func(c *Conversation, f *Frame) any
}

// A Requirer is a Rule that reads analyses.
type Requirer interface {
	Requires() []*Analysis
}

// Result returns what analysis a computed for the frame being checked (nil
// when it failed). It panics when the engine does not run a: the rule
// asking did not declare it in Requires.
//
// The analyses of an engine are few (three for rules.Default, a few more
// with --spec): a scan of them costs less than the map it replaced, and
// every rule reading an analysis asks for it on every frame.
func (c *Conversation) Result(a *Analysis) any {
	for i, x := range c.analyses {
		if x == a {
			return c.results[i]
		}
	}
	panic(fmt.Sprintf("tap: analysis %q was not declared by any rule of this engine", a.Name))
}

// analysesOf returns every analysis the rules require, directly or
// through other analyses, each after those it requires. It panics on a
// cycle.
func analysesOf(rules []Rule) []*Analysis {
	var order []*Analysis
	state := map[*Analysis]int{} // 1: visiting, 2: done
	var visit func(a *Analysis, path []string)
	visit = func(a *Analysis, path []string) {
		switch state[a] {
		case 1:
			panic(fmt.Sprintf("tap: analyses require each other in a cycle: %v -> %s", path, a.Name))
		case 2:
			return
		}
		state[a] = 1
		for _, r := range a.Requires {
			visit(r, append(path, a.Name))
		}
		state[a] = 2
		order = append(order, a)
	}
	for _, r := range rules {
		if rq, ok := r.(Requirer); ok {
			for _, a := range rq.Requires() {
				visit(a, nil)
			}
		}
	}
	return order
}

// VerifyAnalyses panics unless every check an analysis of rules files
// problems under is reported by a rule that reads that analysis: a problem
// no rule reports would vanish without a word. A complete rule set
// (rules.Default) calls it at construction.
func VerifyAnalyses(rules []Rule) {
	type key struct {
		a     *Analysis
		check vocab.CheckID
	}
	reported := make(map[key]bool)
	for _, r := range rules {
		if rq, ok := r.(Requirer); ok {
			for _, a := range rq.Requires() {
				reported[key{a, r.Info().Check}] = true
			}
		}
	}
	for _, a := range analysesOf(rules) {
		for _, check := range a.Checks {
			if !reported[key{a, check}] {
				panic(fmt.Sprintf("tap: analysis %q files problems under %s, but no rule reading it reports %s", a.Name, check, check))
			}
		}
	}
}

// analyse runs every analysis of the engine on f, in order. A panicking
// analysis becomes a TAP-2 finding and a nil result.
func (e *Engine) analyse(f *Frame) (out []Finding) {
	for i, a := range e.analyses {
		if fd, failed := e.runAnalysis(i, a, f); failed {
			out = append(out, fd)
		}
	}
	return out
}

func (e *Engine) runAnalysis(i int, a *Analysis, f *Frame) (fd Finding, failed bool) {
	c := e.conv
	c.results[i] = nil
	defer func() {
		if p := recover(); p != nil {
			fd = TapInternal.At(f, Error, "", "ahp-tap internal error in analysis %s: %v (please report it; traffic was not affected)", a.Name, p)
			failed = true
		}
	}()
	c.results[i] = a.Run(c, f)
	return fd, false
}
