package rules

import "github.com/ahp-tap/ahp-tap/tap"

func authorityRules() []tap.Rule { return nil }
