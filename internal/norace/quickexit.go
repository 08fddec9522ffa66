package norace

import (
	"os"
	"strings"
)

// QuickExit stops the race-built children this test binary starts (the
// test binary as a helper backend, as ahp-tap, as an audit process) from
// sleeping 1 s before they exit: the race runtime's default
// atexit_sleep_ms=1000. That sleep only gives goroutines still running a
// chance to race; a report already under way is still waited for and
// still makes the child exit 66, so the children stay exactly as checked.
// Each child slept about 1 s of wall time: in cmd/ahp-tap several hundred,
// most of the package's wall time; in stdio, a second per helper backend.
// An atexit_sleep_ms the caller put in GORACE wins. TestMain calls it
// before m.Run; it does nothing without -race.
func QuickExit() {
	if !Race {
		return
	}
	g := os.Getenv("GORACE")
	if strings.Contains(g, "atexit_sleep_ms") {
		return
	}
	os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
}
