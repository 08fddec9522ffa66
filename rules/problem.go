package rules

import (
	"unsafe"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A problem is one shape violation found inside a value by a validator that
// several rules share (content model, effects, events). The rule that calls
// the validator turns problems into findings.
type problem struct {
	check string     // catalogue ID the problem belongs to
	ptr   string     // JSON Pointer into the frame
	msg   string     // one sentence naming the field and what was expected
	older olderDraft // the earlier draft this shape matches, if any (hint)
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

// frameMemo caches one per-frame analysis in the conversation. The frame
// is known by its sequence number and address; the address is kept as a
// number so that the cache never keeps a frame alive (Rule contract).
type frameMemo struct {
	seq   uint64
	addr  uintptr
	probs []problem
}

// memoized returns analyse(c, f), computed once per conversation and frame
// however many rules ask; key names the analysis.
func memoized(c *tap.Conversation, key string, f *tap.Frame, analyse func(*tap.Conversation, *tap.Frame) []problem) []problem {
	m := c.RuleState(key, func() any { return &frameMemo{} }).(*frameMemo)
	addr := uintptr(unsafe.Pointer(f))
	if m.addr == addr && m.seq == f.Seq {
		return m.probs
	}
	m.seq, m.addr, m.probs = f.Seq, addr, analyse(c, f)
	return m.probs
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
			out = append(out, hintOlderDraft(c, r.info.At(f, 0, p.ptr, "%s", p.msg), p.older))
		}
	}
	return out
}
