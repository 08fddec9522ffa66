//go:build !linux

package stdio

import "time"

// processStarted is about when this process began: its package
// initialisation.
func processStarted() time.Time { return time.Now() }
