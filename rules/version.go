package rules

import "github.com/ahp-tap/ahp-tap/tap"

func versionRules() []tap.Rule { return nil }
