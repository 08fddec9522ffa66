package rules

import "github.com/ahp-tap/ahp-tap/tap"

func framingRules() []tap.Rule { return nil }
