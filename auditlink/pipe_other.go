//go:build unix && !linux

package auditlink

import "syscall"

// auditPipe makes the audit link's pipe, both ends close-on-exec.
func auditPipe(bool) (r, w int, err error) {
	var fds [2]int
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := syscall.Pipe(fds[:]); err != nil {
		return -1, -1, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds[0], fds[1], nil
}
