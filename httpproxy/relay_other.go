//go:build !unix

package httpproxy

import "net"

// idleConnAlive cannot peek here; a closed idle connection shows up as a
// failed exchange instead (retried when the request can be sent again).
func idleConnAlive(*upstreamConn) bool { return true }

// canPark: no buffer-less wait here; an idle connection keeps its buffers.
func canPark(net.Conn) bool { return false }

func waitReadable(net.Conn) error { return nil }
