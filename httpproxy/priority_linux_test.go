package httpproxy

import (
	"runtime"
	"syscall"
	"testing"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

func TestLowerAuditPriority(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	procs := runtime.GOMAXPROCS(0)
	niceOf := func() int {
		// The kernel's getpriority returns 20 - nice.
		p, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
		return 20 - p
	}
	seen := make(chan int, 1)
	s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.HTTP}, Rules: rules.Set(rules.Options{})})
	a := s.Audit(tap.AuditorConfig{Begin: LowerAuditPriority, Taken: func(*tap.Frame) { seen <- niceOf() }})
	a.Submit(&tap.Frame{Dir: tap.FromHarness, Transport: tap.HTTP, Raw: []byte(interceptBody)})
	if nice := <-seen; nice != 19 {
		t.Errorf("audit thread nice = %d, want 19", nice)
	}
	a.Close()
	if niceOf() == 19 {
		t.Errorf("the test's own thread was niced too")
	}
	if got := runtime.GOMAXPROCS(0); procs == startProcs && got != procs+1 {
		t.Errorf("GOMAXPROCS = %d, want %d", got, procs+1)
	}
	// A second call (on a goroutine whose thread ends with it) adds no P.
	done := make(chan struct{})
	go func() { defer close(done); LowerAuditPriority() }()
	<-done
	if got := runtime.GOMAXPROCS(0); procs == startProcs && got != procs+1 {
		t.Errorf("GOMAXPROCS after a second call = %d, want %d", got, procs+1)
	}
}
