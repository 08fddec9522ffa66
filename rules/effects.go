package rules

import "github.com/ahp-tap/ahp-tap/tap"

func effectRules() []tap.Rule { return nil }

func interceptResultProblems(res *tap.Value, ptr string) []problem { return nil }
