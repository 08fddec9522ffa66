package rules

import (
	"fmt"
	"strings"
	"testing"
)

// STDIO-3 names the oldest intercept still outstanding, as requests are
// answered and retried, through thousands of them (it walks no longer
// every outstanding one per request: issue 28 item 8).
func TestPersistentRuleNamesOldest(t *testing.T) {
	req := func(id string) step {
		return h(strings.ReplaceAll(stdioIntercept, `"e1"`, `"`+id+`"`))
	}
	answer := func(id string) step { return b(strings.ReplaceAll(stdioAnswer1, `"e1"`, `"`+id+`"`)) }
	steps := []step{req("q1"), req("q2"), answer("q1"), req("q3"), req("q2")}
	for i := range 3000 {
		id := fmt.Sprintf("n%d", i)
		steps = append(steps, req(id), answer(id))
	}
	steps = append(steps, answer("q2"), req("last"))
	fs := withCheck(runSteps(stdioConfig("persistent"), steps...), "STDIO-3")
	want := []string{
		`"q2" was sent while hooks/intercept "q1"`,   // q1 outstanding
		`"q3" was sent while hooks/intercept "q2"`,   // q1 answered: q2 is the oldest
		`"q2" was sent while hooks/intercept "q3"`,   // a retry of q2: the oldest other than it
		`"n0" was sent while hooks/intercept "q3"`,   // q2's retry replaced q2: q3 is older
		`"last" was sent while hooks/intercept "q3"`, // after 3000 answered in between
	}
	if len(fs) != 3003+1 {
		t.Fatalf("%d STDIO-3 findings, want %d", len(fs), 3004)
	}
	for i, w := range want[:4] {
		if !strings.Contains(fs[i].Message, w) {
			t.Errorf("finding %d: %s, want %s", i, fs[i].Message, w)
		}
	}
	if !strings.Contains(fs[len(fs)-1].Message, want[4]) {
		t.Errorf("last finding: %s, want %s", fs[len(fs)-1].Message, want[4])
	}
}
