//go:build !linux

package auditlink

import "errors"

// peerUID is not implemented here: the shared audit process is Linux's
// (elsewhere each event has an audit process of its own).
func peerUID(int) (int, error) { return -1, errors.New("peer credentials are not available here") }

// unixSocket is not used here (see peerUID).
func unixSocket() (int, error) { return -1, errors.New("the shared audit process is Linux's") }
