package rules

import "github.com/ahp-tap/ahp-tap/tap"

func contentRules() []tap.Rule { return nil }
