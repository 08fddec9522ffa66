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

// idleProcess puts every thread of this process in SCHED_IDLE.
func idleProcess() {
	eachThread(func(tid int) bool {
		pol, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
		if errno != 0 || pol == schedIdle {
			return false
		}
		var param [1]int32
		_, _, errno = syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), schedIdle, uintptr(unsafe.Pointer(&param[0])))
		return errno == 0
	})
}

// eachThread calls change for every thread of this process until a pass
// over them changes none (change reports whether it did): threads the
// runtime starts meanwhile may have inherited the old priority. A few
// passes bound it; a thread it cannot change keeps its priority.
func eachThread(change func(tid int) bool) {
	for range 8 {
		changed := false
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil && change(tid) {
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// niceProcess sets every thread of this process to nice n, as
// idleProcess does the policy.
func niceProcess(n int) {
	eachThread(func(tid int) bool {
		cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid) // 20 - nice, as the kernel gives it
		return err == nil && 20-cur != n && syscall.Setpriority(syscall.PRIO_PROCESS, tid, n) == nil
	})
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
