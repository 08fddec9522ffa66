package report

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// TestRunCoverageMerges checks how the run merges what several judges of
// one input concluded per check: the most conclusive answer wins per
// input, and NotPossible lists only the checks no judge could make.
func TestRunCoverageMerges(t *testing.T) {
	r, err := NewRun(RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r.StartInput("a")
	traffic := tap.Facts{Transport: tap.Stdio, Lifecycle: tap.LifecyclePersistent, Frames: 2, Harness: 1, Backend: 1, Events: 1, Intercepts: 1, Answers: 1}
	r.Covered(traffic) // no deadline, no registration
	withDeadline := traffic
	withDeadline.Deadline = true
	r.Covered(withDeadline) // a second segment had one
	r.Cover("COND-1", rules.Exercised, "")
	r.EndInput(InputEnd{})
	end, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]CheckStatus{}
	for _, cs := range end.Inputs[0].Checks {
		status[cs.Check] = cs
	}
	if cs := status["CORR-3"]; !cs.Exercised {
		t.Errorf("CORR-3 = %+v: one segment had a deadline and an answer, want exercised", cs)
	}
	if cs := status["BASE-5"]; !cs.NotChecked || cs.Why() != "not checked: no registration: give --registration FILE --hook ID (or capture with them)" {
		t.Errorf("BASE-5 = %+v (%s), want not checked for want of a registration", cs, cs.Why())
	}
	if cs := status["COND-1"]; !cs.Exercised {
		t.Errorf("COND-1 = %+v, want exercised by the conduct judge", cs)
	}
	if cs := status["COND-2"]; cs.Exercised || cs.NotChecked {
		t.Errorf("COND-2 = %+v, want not exercised (one link only)", cs)
	}
	var np []string
	for _, n := range end.NotPossible {
		np = append(np, n.Check)
	}
	if len(np) != 2 || np[0] != "STDIO-2" || np[1] != "BASE-5" {
		t.Errorf("NotPossible = %v, want STDIO-2 and BASE-5 (CORR-3 was made by one segment)", np)
	}
}
