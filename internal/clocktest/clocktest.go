// Package clocktest has a tap.Clocker for tests of the feeders that tell
// a live conduct client its clock (auditlink.Feed, the stdio tap's
// in-process auditor).
package clocktest

import (
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Told is a tap.Clocker that passes on the times it is told, dropping
// those its buffer has no room for.
type Told chan time.Time

// Judged implements tap.Watcher: frames are not its concern.
func (Told) Judged(*tap.Frame, *tap.Exchange) {}

// Clock implements tap.Clocker.
func (c Told) Clock(t time.Time) {
	select {
	case c <- t:
	default:
	}
}
