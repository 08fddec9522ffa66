//go:build !unix

package httpproxy

// idleConnAlive cannot peek here; a closed idle connection shows up as a
// failed exchange instead (retried when the request can be sent again).
func idleConnAlive(*upstreamConn) bool { return true }
