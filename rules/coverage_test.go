package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// TestNotCheckedFromCatalogue checks the one policy for "not checked": a
// session's configuration judged against each check's Scope.
func TestNotCheckedFromCatalogue(t *testing.T) {
	reg, _, _ := tap.ParseJSON([]byte(`{"hooks":[{"id":"h","transport":{"lifecycle":"per_event"},"subscriptions":[{"mode":"intercept","events":["*"],"timeoutMs":100}]}]}`))
	list := func(cfg tap.SessionConfig) string {
		cfg.Rules = Set(Options{})
		var out []string
		for _, n := range tap.NewSession(cfg).NotChecked() {
			out = append(out, n.Check)
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		name string
		cfg  tap.SessionConfig
		want string
	}{
		{"bare stdio", tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}}, "STDIO-2 STDIO-3 BASE-5 CORR-3"},
		{"stdio hook per_event", tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: reg, HookID: "h"}}, "STDIO-3 BASE-6"},
		{"per_event with shared events", tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: reg, HookID: "h"}, SharedEvents: true}, "STDIO-3"},
		{"stdio persistent timeout", tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Timeout: time.Second, Lifecycle: tap.LifecyclePersistent}}, "STDIO-2 BASE-5"},
		{"http registration without hook", tap.SessionConfig{Config: tap.Config{Transport: tap.HTTP, Registration: reg}}, "BASE-5 CORR-3"},
		{"file", tap.SessionConfig{Config: tap.Config{Transport: tap.File}}, ""},
	} {
		if got := list(c.cfg); got != c.want {
			t.Errorf("%s: not checked %q, want %q", c.name, got, c.want)
		}
	}
}

// TestCoverage checks what exercises a check, and that a lifecycle hint
// never names a flag only one command takes as if every command took it.
func TestCoverage(t *testing.T) {
	get := func(id string) Check { c, _ := CheckByID(id); return c }
	events := tap.Facts{Transport: tap.Stdio, Lifecycle: tap.LifecyclePersistent, Frames: 2, Harness: 1, Backend: 1, Events: 1, Intercepts: 1, Answers: 1}
	for _, c := range []struct {
		id    string
		f     tap.Facts
		state CoverState
		why   string
	}{
		{"EDIT-1", events, Exercised, ""},                              // content in events
		{"EDIT-2", events, Exercised, ""},                              // content in events
		{"EDIT-3", events, NotExercised, "no modify effect"},           // edits only in modify effects
		{"EDIT-8", events, NotExercised, "no user.elicitation event"},  // judges the harness's elicitation events
		{"STDIO-3", events, Exercised, ""},                             // persistent, an intercept
		{"STDIO-2", events, NotChecked, "the lifecycle is persistent"}, // another lifecycle
		{"HTTP-1", events, NotExercised, "no HTTP traffic"},            // another binding
		{"TAP-1", tap.Facts{}, Exercised, ""},                          // the audit itself
		{"CORR-3", events, NotChecked, "no deadline"},                  // configuration
		{"STDIO-3", tap.Facts{Transport: tap.Stdio, Frames: 1}, NotChecked, "the lifecycle is unknown"},
	} {
		st, why := Coverage(get(c.id), c.f)
		if st != c.state || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v %q, want %v %q", c.id, st, why, c.state, c.why)
		}
		if strings.Contains(why, "or --lifecycle") {
			t.Errorf("%s: %q offers --lifecycle to every command (replay rejects it)", c.id, why)
		}
	}
	for _, c := range Catalogue {
		if c.ID == "EDIT-8" && c.Scope.Judges != JudgesHarness {
			t.Errorf("EDIT-8 judges %q, want the harness (it judges the elicitation events the harness sends)", c.Scope.Judges)
		}
	}
	if !JudgesRole("EDIT-8", tap.FromHarness, "harness") || JudgesRole("EDIT-8", tap.FromHarness, "backend") {
		t.Error("EDIT-8 findings must count against a role=harness claim, not a role=backend one")
	}
}

// TestScopeTextComplete checks that every catalogue row's Scope reads in
// full in docs/checks.md (no role or exercise without words).
func TestScopeTextComplete(t *testing.T) {
	for _, c := range Catalogue {
		txt := ScopeText(c.Scope)
		if strings.Contains(txt, ":  ·") || strings.HasSuffix(txt, ": ") {
			t.Errorf("%s: %q has a part without words", c.ID, txt)
		}
	}
}
