//go:build unix && !linux

package stdio

import (
	"errors"
	"os/signal"
	"syscall"
)

// sysProcAttr runs the backend in its own process group so that signals
// reach everything it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// defaultAction restores the default handling of sig as far as the Go
// runtime allows.
func defaultAction(sig syscall.Signal) { signal.Reset(sig) }

// backgroundThread is a no-op where threads cannot be given their own
// priority.
func backgroundThread(Priority) {}

// idleProcess is a no-op where threads cannot be given their own
// scheduling policy.
func idleProcess() {}

func niceProcess(int) {}

// sessionNice is a no-op where the scheduler makes no group of a session.
func sessionNice(int) {}

// setSessionNice is unsupported where the scheduler makes no group of a
// session.
func setSessionNice(int) error { return errors.ErrUnsupported }

// pendingBytes cannot say here.
func pendingBytes(uintptr) int64 { return 0 }
