package vocab

import (
	"regexp"
	"slices"
	"testing"
)

// The tables hang together: 44 distinct check IDs of the catalogue's form,
// 32 distinct events of which 19 interceptable, one boundary per
// interceptable event, every boundary effect a core effect and every
// target a modify target. (rules/vocabulary_test.go checks them against
// the upstream schemas, and the check IDs against rules.Catalogue.)
func TestTablesHangTogether(t *testing.T) {
	form := regexp.MustCompile(`^(BASE|STDIO|HTTP|AUTH|CORR|CAP|EVT|EFF|EDIT|COND|TAP)-[0-9]+$`)
	seen := map[CheckID]bool{}
	for _, c := range Checks {
		if !form.MatchString(string(c)) || seen[c] {
			t.Errorf("check %q: malformed or repeated", c)
		}
		seen[c] = true
	}
	if len(Checks) != 44 {
		t.Errorf("len(Checks) = %d, want 44", len(Checks))
	}
	names := map[string]bool{}
	interceptable := 0
	for _, e := range Events {
		if names[e.Name] {
			t.Errorf("event %s repeated", e.Name)
		}
		names[e.Name] = true
		if e.Interceptable {
			interceptable++
			if _, ok := Boundaries[e.Name]; !ok {
				t.Errorf("interceptable event %s has no boundary", e.Name)
			}
		}
	}
	if len(Events) != 32 || interceptable != 19 || len(Boundaries) != 19 {
		t.Errorf("events %d (interceptable %d), boundaries %d; want 32, 19, 19", len(Events), interceptable, len(Boundaries))
	}
	for name, b := range Boundaries {
		for _, e := range b.Effects {
			if !slices.Contains(Effects, e) {
				t.Errorf("%s allows %q, not a core effect", name, e)
			}
		}
		if b.Target != "" && !slices.Contains(ModifyTargets, b.Target) {
			t.Errorf("%s targets %q, not a modify target", name, b.Target)
		}
		if (b.Target != "") != slices.Contains(b.Effects, EffectModify) {
			t.Errorf("%s: a modify target exactly when modify is allowed", name)
		}
	}
}
