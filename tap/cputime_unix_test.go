//go:build unix

package tap_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system, every thread) this process has
// used. Benchmarks report frames per CPU-second next to frames per
// wall-second, because on a shared machine wall time mostly measures the
// neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
