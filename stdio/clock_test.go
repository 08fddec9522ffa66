package stdio

import (
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/clocktest"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// TestInProcessAuditTellsAClockerWhileQuiet: a tap auditing in process
// (--audit complete, or no audit process) tells a Clocker watching its
// session the time while the link is quiet, past the frames it has
// forwarded, as an audit process does: without it a live conduct server
// cannot tell a quiet link from a lagging one.
func TestInProcessAuditTellsAClockerWhileQuiet(t *testing.T) {
	told := make(clocktest.Told, 64)
	cfg := helperConfig("cat")
	cfg.Session = tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}), Sink: &findings{}, Watch: told})
	_, inW, out, done := startAsync(t, cfg)
	defer func() {
		inW.Close()
		<-done
	}()
	if _, err := inW.Write([]byte(`{"jsonrpc":"2.0","method":"hooks/notify","params":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	back := time.Now()                    // the line was read, and forwarded both ways, before this
	bound := time.After(10 * time.Second) // a bound on a hang, not a measurement
	for {
		select {
		case at := <-told:
			if at.After(back) {
				return
			}
		case <-bound:
			t.Fatal("a quiet in-process audit never told its Clocker a time past the frames it forwarded")
		}
	}
}

// TestTapClockVouchesOnlyForWhatIsQueued: the in-process auditor's Clock
// vouches for nothing while the feeder holds a chunk or note already
// timed (the session would judge a deadline before the frame that meets
// it: a false CORR-3), and for now once everything is queued.
func TestTapClockVouchesOnlyForWhatIsQueued(t *testing.T) {
	tp := New(helperConfig("cat"))
	now := time.Now()
	if got := tp.clock(now); !got.Equal(now) {
		t.Errorf("nothing in flight: clock %v, want %v", got, now)
	}
	tp.inFlight.Add(1)
	if got := tp.clock(now); !got.IsZero() {
		t.Errorf("a chunk in flight: clock %v, want the zero time", got)
	}
	tp.inFlight.Add(-1)
	if got := tp.clock(now); !got.Equal(now) {
		t.Errorf("handled: clock %v, want %v", got, now)
	}
}
