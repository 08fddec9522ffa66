package rules

import "github.com/ahp-tap/ahp-tap/tap"

func retryRules() []tap.Rule { return nil }
