package rules

import "github.com/ahp-tap/ahp-tap/tap"

func eventRules() []tap.Rule { return nil }

func eventProblems(ev *tap.Value, ptr string, intercept bool) []problem { return nil }
