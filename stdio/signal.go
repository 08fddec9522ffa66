package stdio

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SignalRepeat is how close a repeated termination signal must follow the
// first to be the same request (issue 21 item 10): GNU timeout signals its
// child and then its own process group, which holds the child, a few
// microseconds apart, and a supervisor may do the same. A second signal
// later than this is a second request: "exit now".
const SignalRepeat = 100 * time.Millisecond

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
