package rules

import (
	"fmt"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Options select optional rules.
type Options struct {
	// Spec, when set, validates every message against an upstream schema
	// snapshot (--spec DIR).
	Spec *Spec
}

// Set is ahp-tap's rule set for a tap.Session: Default(opts) for each
// engine, and the registration judged by RegistrationFindingsFor and, with
// --spec, by the upstream schema.
func Set(opts Options) tap.RuleSet { return ruleSet{opts} }

type ruleSet struct{ opts Options }

func (s ruleSet) Rules() []tap.Rule { return Default(s.opts) }

func (s ruleSet) Registration(doc *tap.Value, snapshot string) []tap.Finding {
	return append(RegistrationFindingsFor(doc, snapshot), s.opts.Spec.RegistrationFindings(doc)...)
}

// Default builds ahp-tap's rule set, one family per file. Rule IDs are
// unique; a duplicate panics here, at construction.
func Default(opts Options) []tap.Rule {
	var all []tap.Rule
	for _, family := range [][]tap.Rule{
		envelopeRules(),      // envelope.go: BASE-1
		framingRules(),       // stdio.go: STDIO-1..3
		httpRules(),          // http.go: HTTP-1..3, AUTH-1
		versionRules(),       // version.go: BASE-2
		unknownRules(),       // unknown.go: BASE-3
		extensionRules(),     // extensions.go: BASE-4
		dispatchRules(),      // dispatch.go: BASE-5
		retryRules(),         // retry.go: BASE-6
		errorRules(),         // errors.go: BASE-7
		harnessRules(),       // harness.go: BASE-8
		authorityRules(),     // authority.go: BASE-9
		correlationRules(),   // correlation.go: CORR-1..3
		capabilityRules(),    // capabilities.go: CAP-1, CAP-2
		eventRules(),         // events.go: EVT-1
		effectRules(),        // effects.go: EFF-1
		contentRules(),       // content.go: EDIT-1, EDIT-2
		editRules(),          // edit.go: EDIT-3..8
		specRules(opts.Spec), // spec.go: --spec schema validation
	} {
		all = append(all, family...)
	}
	tap.VerifyAnalyses(all) // a problem no rule reports panics here, not silently
	seen := make(map[string]bool)
	for _, r := range all {
		id := r.Info().ID
		if seen[id] {
			panic(fmt.Sprintf("rules: duplicate rule ID %q", id))
		}
		seen[id] = true
	}
	return all
}
