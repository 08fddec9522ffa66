//go:build !linux

package httpproxy

import "github.com/ahp-tap/ahp-tap/tap"

// LowerAuditPriority is a no-op where per-thread priorities are not
// available; the audit runs at the process's priority.
func LowerAuditPriority(*tap.Auditor) error { return nil }
