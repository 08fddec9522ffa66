package rules

import "github.com/ahp-tap/ahp-tap/tap"

func errorRules() []tap.Rule { return nil }
