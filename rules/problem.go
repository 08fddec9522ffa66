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

// An analysisRule reports the problems of its one check that a shared
// per-frame analysis found. Several checks read one analysis (the shape
// walk, the edit evaluation), which runs once per frame however many of
// those rules are enabled.
type analysisRule struct {
	info    tap.RuleInfo
	analyse func(c *tap.Conversation, f *tap.Frame) []problem
}

func (r analysisRule) Info() tap.RuleInfo { return r.info }

func (r analysisRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	var out []tap.Finding
	for _, p := range r.analyse(c, f) {
		if p.check == r.info.Check {
			out = append(out, r.info.At(f, 0, p.ptr, "%s", p.msg))
		}
	}
	return out
}
