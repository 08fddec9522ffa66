//go:build unix

package httpproxy

import (
	"crypto/tls"
	"syscall"
)

// idleConnAlive reports whether a kept-alive upstream connection is still
// open: nothing is waiting to be read on it (an idle connection that has a
// FIN, a TLS alert or stray bytes queued is one the upstream has given
// up). It peeks without consuming and without blocking.
func idleConnAlive(u *upstreamConn) bool {
	if u.br.Buffered() > 0 {
		return false
	}
	nc := u.nc
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := true
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		// EOF (0, nil) or bytes (n > 0, nil): given up; EAGAIN: alive.
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && alive
}
