package tap

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/vocab"
)

// readRule reports under check the result of the analyses it requires.
type readRule struct {
	check string
	reads []*Analysis
	got   *[]string
}

func (r readRule) Info() RuleInfo {
	return RuleInfo{ID: "TEST/" + r.check, Check: vocab.CheckID(r.check)}
}
func (r readRule) Requires() []*Analysis { return r.reads }
func (r readRule) Check(c *Conversation, f *Frame) []Finding {
	for _, a := range r.reads {
		*r.got = append(*r.got, r.check+"="+c.Result(a).(string))
	}
	return nil
}

// TestAnalysesRunOncePerFrameInDependencyOrder declares two analyses, the
// second reading the first, and two rules in the "wrong" order: each
// analysis runs once per frame, before the rules, after what it requires.
func TestAnalysesRunOncePerFrameInDependencyOrder(t *testing.T) {
	var runs []string
	base := &Analysis{Name: "base", Run: func(c *Conversation, f *Frame) any {
		runs = append(runs, "base")
		return "b" + string(f.Raw)
	}}
	derived := &Analysis{Name: "derived", Requires: []*Analysis{base}, Run: func(c *Conversation, f *Frame) any {
		runs = append(runs, "derived")
		return c.Result(base).(string) + "+d"
	}}
	var got []string
	e := NewEngine(Config{}, []Rule{
		readRule{"X-1", []*Analysis{derived}, &got},
		readRule{"X-2", []*Analysis{base}, &got},
		readRule{"X-3", []*Analysis{derived, base}, &got},
	})
	e.Feed(&Frame{Raw: []byte("1")})
	e.Feed(&Frame{Raw: []byte("2")})
	if s := strings.Join(runs, " "); s != "base derived base derived" {
		t.Errorf("analysis runs = %s; want base then derived, once per frame", s)
	}
	if s := strings.Join(got, " "); s != "X-1=b1+d X-2=b1 X-3=b1+d X-3=b1 X-1=b2+d X-2=b2 X-3=b2+d X-3=b2" {
		t.Errorf("rules read %s", s)
	}
}

// TestVerifyAnalysesPanicsOnUnreportedCheck is the mutation test: an
// analysis that files problems under a check no rule reading it reports
// makes construction panic, naming the check.
func TestVerifyAnalysesPanicsOnUnreportedCheck(t *testing.T) {
	a := &Analysis{Name: "walk", Checks: []vocab.CheckID{"X-1", "NOPE-1"}, Run: func(*Conversation, *Frame) any { return "" }}
	var got []string
	ok := []Rule{readRule{"X-1", []*Analysis{a}, &got}, readRule{"NOPE-1", []*Analysis{a}, &got}}
	VerifyAnalyses(ok) // every check reported: no panic
	defer func() {
		p := recover()
		if p == nil || !strings.Contains(p.(string), "NOPE-1") {
			t.Errorf("VerifyAnalyses with NOPE-1 unreported: panic %v, want one naming NOPE-1", p)
		}
	}()
	// A rule reporting NOPE-1 that does not read the analysis does not count.
	VerifyAnalyses([]Rule{ok[0], readRule{"NOPE-1", nil, &got}})
}

func TestAnalysisPanicIsTAP2AndCycleIsRefused(t *testing.T) {
	bad := &Analysis{Name: "bad", Run: func(*Conversation, *Frame) any { panic("boom") }}
	var got []string
	e := NewEngine(Config{}, []Rule{ruleFunc(func(c *Conversation, f *Frame) []Finding {
		if c.Result(bad) != nil {
			got = append(got, "non-nil")
		}
		return nil
	}), readRule{"X-1", []*Analysis{bad}, &got}})
	fs := e.Feed(&Frame{Raw: []byte(`{}`)})
	if len(fs) < 1 || fs[0].Check != "TAP-2" || !strings.Contains(fs[0].Message, "analysis bad: boom") {
		t.Errorf("findings %v; want TAP-2 naming the analysis", fs)
	}
	a := &Analysis{Name: "a"}
	b := &Analysis{Name: "b", Requires: []*Analysis{a}}
	a.Requires = []*Analysis{b}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "cycle") {
			t.Errorf("cyclic analyses: panic %v, want a cycle panic", p)
		}
	}()
	NewEngine(Config{}, []Rule{readRule{"X-1", []*Analysis{a}, &got}})
}

// TestUndeclaredAnalysisIsTAP2: a rule reading an analysis no rule of the
// engine declared gets no result of another's; it panics, which the
// engine reports as TAP-2 naming the analysis, and the rules after it run.
func TestUndeclaredAnalysisIsTAP2(t *testing.T) {
	declared := &Analysis{Name: "declared", Run: func(*Conversation, *Frame) any { return "d" }}
	undeclared := &Analysis{Name: "undeclared", Run: func(*Conversation, *Frame) any { return "u" }}
	var got []string
	e := NewEngine(Config{}, []Rule{
		readRule{"X-1", []*Analysis{declared}, &got},
		ruleFunc(func(c *Conversation, f *Frame) []Finding {
			got = append(got, "read="+c.Result(undeclared).(string))
			return nil
		}),
		readRule{"X-2", []*Analysis{declared}, &got},
	})
	fs := e.Feed(&Frame{Raw: []byte(`{}`)})
	if len(fs) != 1 || fs[0].Check != "TAP-2" || !strings.Contains(fs[0].Message, `analysis "undeclared" was not declared`) {
		t.Errorf("findings %v; want one TAP-2 naming the undeclared analysis", fs)
	}
	if s := strings.Join(got, " "); s != "X-1=d X-2=d" {
		t.Errorf("rules read %s", s)
	}
}
