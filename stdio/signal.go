package stdio

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// signalName names a signal as people write it ("SIGKILL").
func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return s.String()
}

// DieOfSignal makes the calling process die of sig, as the backend did, so
// that the harness sees the same fate it would have seen without ahp-tap.
// It returns only when that was not possible (the signal is blocked or
// ignored in a way ahp-tap cannot undo); the caller then exits 128+sig.
func DieOfSignal(sig syscall.Signal) {
	signal.Reset(sig)
	defaultAction(sig)
	_ = syscall.Kill(os.Getpid(), sig)
	// Delivery is asynchronous; give it a moment before falling back.
	time.Sleep(100 * time.Millisecond)
}
