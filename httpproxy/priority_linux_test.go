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
	want := withAudit(procs, 1)
	if got := runtime.GOMAXPROCS(0); procs == startProcs && got != want {
		t.Errorf("GOMAXPROCS = %d, want %d", got, want)
	}
	// A second call (on a goroutine whose thread ends with it) changes
	// nothing more.
	done := make(chan struct{})
	go func() { defer close(done); LowerAuditPriority() }()
	<-done
	if got := runtime.GOMAXPROCS(0); procs == startProcs && got != want {
		t.Errorf("GOMAXPROCS after a second call = %d, want %d", got, want)
	}
}

// The audit threads' Ps come out of the CPUs' while forwarding keeps one
// beside them all; never more than one P over the CPUs.
func TestWithAudit(t *testing.T) {
	for _, tc := range []struct{ procs, n, want int }{
		{2, 1, 2}, {1, 1, 2}, {8, 1, 8}, {2, 2, 3}, {2, 5, 3}, {8, 8, 9}, {8, 3, 8},
	} {
		if got := withAudit(tc.procs, tc.n); got != tc.want {
			t.Errorf("withAudit(%d, %d) = %d, want %d", tc.procs, tc.n, got, tc.want)
		}
	}
}
