package rules

import "github.com/ahp-tap/ahp-tap/tap"

func effectRules() []tap.Rule { return nil }
