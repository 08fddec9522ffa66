package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// TestRuleSetWithoutAReporterPanics removes, one at a time, each rule
// that reports an analysis's check from the default set: construction
// must then panic naming the check, so a problem can never be filed where
// no rule reports it.
func TestRuleSetWithoutAReporterPanics(t *testing.T) {
	all := Default(Options{})
	removed := 0
	for i, r := range all {
		if _, ok := r.(analysisRule); !ok {
			continue
		}
		removed++
		rest := append(append([]tap.Rule{}, all[:i]...), all[i+1:]...)
		func() {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(p.(string), string(r.Info().Check)) {
					t.Errorf("without %s: panic %v; want one naming %s", r.Info().ID, p, r.Info().Check)
				}
			}()
			tap.VerifyAnalyses(rest)
		}()
	}
	if removed < 12 {
		t.Errorf("only %d analysis rules found; want the shape and edit checks (12)", removed)
	}
}

// TestAnalysisProblemUnderUndeclaredCheck files a problem under a check
// the analysis does not declare: the engine reports it as an internal
// error (TAP-2) naming the check, instead of dropping it.
func TestAnalysisProblemUnderUndeclaredCheck(t *testing.T) {
	a := problemAnalysis("mutant", []vocab.CheckID{vocab.Evt1}, nil, func(*tap.Conversation, *tap.Frame) []problem {
		return []problem{{check: "EVT-9", ptr: "/x", msg: "no such check"}}
	})
	fs := runRules(tap.Config{}, []tap.Rule{analysisRule{info: info("EVT-1/mutant", "EVT-1", "test"), analyses: []*tap.Analysis{a}}},
		harnessFrame(`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}`))
	if len(fs) != 1 || fs[0].Check != "TAP-2" || !strings.Contains(fs[0].Message, "EVT-9") {
		t.Errorf("findings %s; want one TAP-2 naming EVT-9", dump(fs))
	}
}
