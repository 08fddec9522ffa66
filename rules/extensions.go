package rules

import "github.com/ahp-tap/ahp-tap/tap"

func extensionRules() []tap.Rule { return nil }
