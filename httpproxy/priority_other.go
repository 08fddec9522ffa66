//go:build !linux

package httpproxy

// LowerAuditPriority is a no-op where per-thread priorities are not
// available; the audit runs at the process's priority.
func LowerAuditPriority() {}
