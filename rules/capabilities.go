package rules

import "github.com/ahp-tap/ahp-tap/tap"

func capabilityRules() []tap.Rule { return nil }
