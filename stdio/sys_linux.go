package stdio

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
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
// that thread's scheduling priority as p says, so that auditing gets the
// CPU the forwarding loops, the harness and the backend leave over. The
// thread is never unpinned: it ends with the goroutine.
func backgroundThread(p Priority) {
	switch p {
	case PriorityNormal:
		return
	case PriorityIdle:
		runtime.LockOSThread()
		// SCHED_IDLE: run only when nothing else wants the CPU.
		var param [1]int32
		_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(syscall.Gettid()), schedIdle, uintptr(unsafe.Pointer(&param[0])))
		if errno == 0 {
			return
		}
		fallthrough // not permitted here: fall back to nice
	default:
		runtime.LockOSThread()
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), auditNice)
	}
}

// schedIdle is Linux's SCHED_IDLE policy.
const schedIdle = 5

// idleProcess puts every thread of this process in SCHED_IDLE. Threads
// the runtime starts while it works may inherit the old policy, so it
// goes over them again until a pass finds none left (a few passes bound
// it; a thread it cannot change keeps its priority).
func idleProcess() {
	for range 8 {
		changed := false
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			pol, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
			if errno != 0 || pol == schedIdle {
				continue
			}
			var param [1]int32
			if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), schedIdle, uintptr(unsafe.Pointer(&param[0]))); errno == 0 {
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// sessionNice sets the nice value of this process's autogroup (the
// group the scheduler makes of its session). Without autogroups (the
// file is missing, or the process is not in the root CPU cgroup, where
// it has no effect) nothing happens. An unprivileged change is refused
// with EAGAIN within 100 ms of another one anywhere on the machine: it
// is retried in the background, for at most about two seconds.
func sessionNice(n int) {
	set := func() error { return setSessionNice(n) }
	if err := set(); err == nil || !errors.Is(err, syscall.EAGAIN) {
		return
	}
	go func() {
		for range 20 {
			time.Sleep(100 * time.Millisecond)
			if err := set(); err == nil || !errors.Is(err, syscall.EAGAIN) {
				return
			}
		}
	}()
}

// setSessionNice sets the nice value of this process's autogroup once.
func setSessionNice(n int) error {
	return os.WriteFile("/proc/self/autogroup", []byte(strconv.Itoa(n)), 0)
}

// pendingBytes is what the pipe or socket fd holds unread (0 when it
// cannot say).
func pendingBytes(fd uintptr) int64 {
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0
	}
	return int64(n)
}
