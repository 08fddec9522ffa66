//go:build unix

package httpproxy

import (
	"crypto/tls"
	"net"
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

// canPark reports whether waitReadable can wait on nc without a buffer: a
// plain TCP connection (a TLS connection may hold decrypted bytes of its
// own that the socket does not show).
func canPark(nc net.Conn) bool {
	_, ok := nc.(*net.TCPConn)
	return ok
}

// waitReadable waits, holding no buffer, until nc has bytes to read, an
// end of file or an error, or its read deadline passes (the error then).
// It peeks; it consumes nothing.
func waitReadable(nc net.Conn) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
	})
}
