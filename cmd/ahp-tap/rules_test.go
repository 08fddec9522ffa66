package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/rules"
)

func TestRulesListsEveryCheckAndRule(t *testing.T) {
	t.Parallel()
	r := runTap(t, "", "rules")
	if r.code != 0 {
		t.Fatalf("rules: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, c := range rules.Catalogue {
		if !strings.Contains(r.stdout, c.ID+" ") {
			t.Errorf("rules does not list check %s", c.ID)
		}
	}
	for _, rule := range rules.Default(rules.Options{}) {
		if !strings.Contains(r.stdout, rule.Info().ID+" ") {
			t.Errorf("rules does not list rule %s", rule.Info().ID)
		}
	}
	for _, ri := range rules.ConductRuleInfos() {
		if !strings.Contains(r.stdout, ri.ID+" ") {
			t.Errorf("rules does not list conduct rule %s", ri.ID)
		}
	}
	r = runTap(t, "", "rules", "--format", "json")
	var doc struct {
		Checks []struct{ ID, Requirement, Level, Summary string }
		Rules  []struct{ ID, Check, Level, Summary string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("rules --format json: %v", err)
	}
	if len(doc.Checks) != len(rules.Catalogue) || len(doc.Rules) < len(rules.Default(rules.Options{})) {
		t.Errorf("rules --format json: %d checks, %d rules", len(doc.Checks), len(doc.Rules))
	}
	for _, ru := range doc.Rules {
		if _, ok := rules.CheckByID(ru.Check); !ok || ru.Level == "" || ru.Summary == "" {
			t.Errorf("rule %+v: unknown check or missing level/summary", ru)
		}
	}
}
