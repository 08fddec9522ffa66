package auditlink

import "syscall"

// auditPipe makes the audit link's pipe, both ends close-on-exec (no
// backend inherits it), and (grow) asks for a 1 MiB buffer (the unprivileged
// maximum) so that a burst of audit copies fits while the audit process
// catches up; a smaller buffer only means more drops under load.
func auditPipe(grow bool) (r, w int, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return -1, -1, err
	}
	const fSetPipeSz = 1031 // F_SETPIPE_SZ
	if !grow {
		return fds[0], fds[1], nil
	}
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, uintptr(fds[1]), fSetPipeSz, 1<<20)
	return fds[0], fds[1], nil
}
