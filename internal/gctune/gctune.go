// Package gctune sets the garbage collector of an audit process: collect
// rarely while the heap is small, and never let it pass a bound in bytes.
// GOGC and GOMEMLIMIT in the environment win over both settings.
package gctune

import (
	"os"
	"runtime/debug"
)

// AuditPercent is the GC percent of the processes that audit: the engine
// allocates a decoded tree per frame that dies with it, so at the default
// 100 (or less) the collector, its write barriers and its assists take a
// fifth of the engine's CPU (bench/engine.sh runs both; BENCHMARKS.md, "Issue 27
// goals at the end of the session").
// The memory limit, not the percent, bounds the heap.
const AuditPercent = 400

// Audit sets the GC percent to AuditPercent and the soft memory limit to
// limit bytes, each unless the environment sets it (GOGC, GOMEMLIMIT).
func Audit(limit int64) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(AuditPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
}
