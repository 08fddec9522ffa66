package rules

import "github.com/ahp-tap/ahp-tap/tap"

func correlationRules() []tap.Rule { return nil }
