package rules

import "github.com/ahp-tap/ahp-tap/tap"

func harnessRules() []tap.Rule { return nil }
