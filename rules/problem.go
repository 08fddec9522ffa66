package rules

import "github.com/ahp-tap/ahp-tap/tap"

// A problem is one shape violation found inside a value by a validator that
// several rules share (content model, effects, events). The rule that calls
// the validator turns problems into findings.
type problem struct {
	check string // catalogue ID the problem belongs to
	ptr   string // JSON Pointer into the frame
	msg   string // one sentence naming the field and what was expected
}

// findings turns problems into findings about f, each under the rule of
// the problem's check.
func findings(f *tap.Frame, byCheck map[string]tap.RuleInfo, ps []problem) []tap.Finding {
	out := make([]tap.Finding, 0, len(ps))
	for _, p := range ps {
		ri, ok := byCheck[p.check]
		if !ok {
			panic("rules: no rule for check " + p.check)
		}
		out = append(out, ri.At(f, 0, p.ptr, "%s", p.msg))
	}
	return out
}
