package main

import (
	"strconv"
	"strings"
)

// auditMode is the value of --audit.
type auditMode string

const (
	auditBestEffort auditMode = "best-effort"
	auditComplete   auditMode = "complete"
	auditOff        auditMode = "false"
)

func (m *auditMode) String() string { return string(*m) }

func (m *auditMode) Set(s string) error {
	switch s {
	case "best-effort", "true":
		*m = auditBestEffort
	case "complete":
		*m = auditComplete
	case "false", "off":
		*m = auditOff
	default:
		return usageError("--audit %q is not best-effort, complete or false", s)
	}
	return nil
}

// Bounds of --audit-budget.
const (
	minAuditBudget = 1 << 20
	maxAuditBudget = 64 << 30
)

// parseBudget parses --audit-budget: a number of bytes with an optional
// KiB, MiB or GiB suffix (K, M, G too), within its bounds.
func parseBudget(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > maxAuditBudget/mult || n*mult < minAuditBudget {
		return 0, usageError("--audit-budget %q is not a size from 1MiB to 64GiB (e.g. 64MiB)", s)
	}
	return n * mult, nil
}
