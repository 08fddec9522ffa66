package stdio

import (
	"runtime"
	"syscall"
	"unsafe"
)

// sysProcAttr runs the backend in its own process group (so that signals
// reach everything it started) and has the kernel kill it if ahp-tap dies
// without a chance to clean up (SIGKILL, a crash).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// defaultAction resets sig to the kernel's default action, bypassing the Go
// runtime, which would otherwise turn a SIGSEGV or SIGABRT sent to itself
// into a stack dump and exit status 2. An all-zero struct sigaction is
// SIG_DFL with no flags on every Linux architecture.
func defaultAction(sig syscall.Signal) {
	var act [8]uint64
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0)
}

// backgroundThread pins the calling goroutine to its OS thread and lowers
// that thread's scheduling priority, so that auditing gets the CPU the
// forwarding loops, the harness and the backend leave over. The thread is
// never unpinned: it ends with the goroutine.
func backgroundThread() {
	runtime.LockOSThread()
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), auditNice)
}
