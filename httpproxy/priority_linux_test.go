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
	a := tap.NewAuditor(tap.NewEngine(tap.Config{Transport: tap.HTTP}, rules.Default(rules.Options{})), nil, nil, 0)
	defer a.Close()
	procs := runtime.GOMAXPROCS(0)
	for range 2 { // a second call changes nothing more
		if err := LowerAuditPriority(a); err != nil {
			t.Fatal(err)
		}
	}
	var nice int
	var mainPrio int
	a.Do(func(*tap.Engine) []tap.Finding {
		// The kernel's getpriority returns 20 - nice.
		p, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
		nice = 20 - p
		return nil
	})
	p, _ := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	mainPrio = 20 - p
	if nice != 19 {
		t.Errorf("audit thread nice = %d, want 19", nice)
	}
	if mainPrio == 19 {
		t.Errorf("the test's own thread was niced too")
	}
	if got := runtime.GOMAXPROCS(0); procs == startProcs && got != procs+1 {
		t.Errorf("GOMAXPROCS = %d, want %d", got, procs+1)
	}
}
