package rules

import "github.com/ahp-tap/ahp-tap/tap"

func httpRules() []tap.Rule { return nil }
