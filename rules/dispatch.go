package rules

import "github.com/ahp-tap/ahp-tap/tap"

func dispatchRules() []tap.Rule { return nil }

// RegistrationFindings validates a registration document as in §5
// (BASE-5, AHP-REG-001/002) and returns its findings.
func RegistrationFindings(reg *tap.Value) []tap.Finding { return nil }
