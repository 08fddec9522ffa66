package httpproxy

import (
	"runtime"
	"syscall"
)

// LowerAuditPriority is an AuditorConfig.Begin for the HTTP tap: it keeps
// the audit goroutine on an OS thread of its own running at the lowest CPU
// priority (nice 19), and gives the Go scheduler one more P, so that under
// CPU contention forwarding wins and the audit falls behind (dropping and
// counting its copies, TAP-1) rather than the other way round (issue 10;
// docs/http-performance.md measured 0.45× nginx at normal audit priority,
// 0.75–0.85× at nice 19). Below saturation every exchange is still audited.
// It must run on the audit goroutine. Where the priority cannot be lowered
// it changes nothing.
func LowerAuditPriority() {
	// Never unlocked: the audit goroutine keeps this thread, and the
	// thread ends with it instead of going back to the pool niced.
	runtime.LockOSThread()
	if syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19) != nil {
		return
	}
	if runtime.GOMAXPROCS(0) == startProcs {
		// A P held by the niced thread while the OS has it descheduled is
		// a P forwarding cannot use: add one (once per process).
		runtime.GOMAXPROCS(startProcs + 1)
	}
}

// startProcs is GOMAXPROCS as the process started (set once, never changed).
var startProcs = runtime.GOMAXPROCS(0)
