package gctune

import (
	"math"
	"runtime/debug"
	"testing"
)

// restore puts the collector back as the test found it.
func restore(t *testing.T) {
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

func TestAuditSetsPercentAndLimit(t *testing.T) {
	restore(t)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	Audit(96 << 20)
	if got := debug.SetGCPercent(100); got != AuditPercent {
		t.Errorf("GC percent %d, want %d", got, AuditPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != 96<<20 {
		t.Errorf("memory limit %d, want %d", got, 96<<20)
	}
}

func TestAuditLeavesTheEnvironmentsSettings(t *testing.T) {
	restore(t)
	t.Setenv("GOGC", "77")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(77)
	debug.SetMemoryLimit(1 << 30)
	Audit(96 << 20)
	if got := debug.SetGCPercent(100); got != 77 {
		t.Errorf("GC percent %d, want GOGC's 77", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit %d, want GOMEMLIMIT's 1 GiB", got)
	}
}
