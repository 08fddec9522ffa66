package rules

import "github.com/ahp-tap/ahp-tap/tap"

func capabilityRules() []tap.Rule { return nil }

func interceptCapabilityProblems(params *tap.Value, ptr string) []problem { return nil }
func capabilitiesRequestProblems(params *tap.Value, ptr string) []problem { return nil }
func capabilitiesResultProblems(res *tap.Value, ptr string) []problem     { return nil }
