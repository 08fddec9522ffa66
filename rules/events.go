package rules

import "github.com/ahp-tap/ahp-tap/tap"

func eventRules() []tap.Rule { return nil }
