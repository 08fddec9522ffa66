package report

import (
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// facts are what an input's traffic held, enough to tell whether a check
// was exercised: a check that had nothing to judge did not pass, it was
// not run (JUnit <skipped>, "not exercised" in a claim matrix).
type facts struct {
	frames, harness, backend   int
	stdio, http                int
	intercepts, observes, caps int // requests/notifications by method
	events                     int // frames carrying params.event
	results, errors            int // responses from the backend
	effects, modifies          int // intercept results with effects / a modify effect
	elicitations               int // events of type user.elicitation.*
	lifecycles                 map[string]bool
	registration, hook         bool
	deadline                   bool
	// conduct: the input is a conduct timeline across the links of a
	// registration (replay of several captures), not one link.
	conduct bool
	// condWhy says, per COND check, why the conduct timeline did not
	// exercise it ("" when it did).
	condWhy map[string]string
}

func (fc *facts) add(f *tap.Frame) {
	if fc.lifecycles == nil {
		fc.lifecycles = map[string]bool{}
	}
	fc.frames++
	switch f.Dir {
	case tap.FromHarness:
		fc.harness++
	case tap.FromBackend:
		fc.backend++
	}
	switch f.Transport {
	case tap.Stdio:
		fc.stdio++
	case tap.HTTP:
		fc.http++
	}
	switch f.Method() {
	case "hooks/intercept":
		fc.intercepts++
	case "hooks/observe":
		fc.observes++
	case "hooks/capabilities":
		fc.caps++
	}
	if ev := f.Event(); ev != nil {
		fc.events++
		if t, _ := ev.Get("type").Text(); strings.HasPrefix(t, "user.elicitation") {
			fc.elicitations++
		}
	}
	if m, ok := f.Msg.(*tap.Response); ok {
		if m.Error != nil {
			fc.errors++
		} else {
			fc.results++
			if effs := m.Result.Get("effects"); effs.Is(tap.Array) {
				fc.effects++
				for _, e := range effs.Arr {
					if t, _ := e.Get("type").Text(); t == "modify" {
						fc.modifies++
						break
					}
				}
			}
		}
	}
}

// exercises reports whether the input held traffic check id judges, and
// if not, why not.
func (fc *facts) exercises(id string) (bool, string) {
	need := func(ok bool, why string) (bool, string) {
		if ok {
			return true, ""
		}
		return false, why
	}
	if strings.HasPrefix(id, "COND-") {
		if !fc.conduct || fc.events == 0 {
			return false, "one link only: conduct is judged when the captures of a registration's backends are replayed together"
		}
		why, ok := fc.condWhy[id]
		return need(ok && why == "", why)
	}
	if fc.frames == 0 && id != "TAP-1" && id != "TAP-2" {
		return false, "the input held no frames"
	}
	switch id {
	case "BASE-1", "BASE-2", "BASE-3", "BASE-4", "CORR-2", "TAP-1", "TAP-2":
		return true, ""
	case "STDIO-1":
		return need(fc.stdio > 0, "no stdio traffic")
	case "STDIO-2":
		return need(fc.stdio > 0 && fc.lifecycles["per_event"], "no stdio traffic with the per_event lifecycle")
	case "STDIO-3":
		return need(fc.stdio > 0 && fc.intercepts > 0 && !fc.lifecycles["per_event"], "no hooks/intercept on a persistent stdio backend")
	case "HTTP-1", "HTTP-2", "HTTP-3", "AUTH-1":
		return need(fc.http > 0, "no HTTP traffic")
	case "BASE-5":
		if !fc.registration {
			return false, "no registration: give --registration FILE --hook ID, or capture with them"
		}
		return need(fc.events > 0, "no event reached the backend")
	case "BASE-6", "BASE-8", "EVT-1":
		return need(fc.events > 0, "no event in the traffic")
	case "BASE-7":
		return need(fc.backend > 0 && (fc.results+fc.errors > 0 || fc.observes > 0), "no backend answer to judge")
	case "BASE-9", "EFF-1":
		return need(fc.effects > 0, "no successful hooks/intercept result with effects")
	case "CORR-1", "CAP-1":
		return need(fc.intercepts > 0, "no hooks/intercept request")
	case "CORR-3":
		if !fc.deadline {
			return false, "no deadline: give --timeout, or a registration whose subscriptions set timeoutMs"
		}
		return need(fc.results+fc.errors > 0, "no response to time")
	case "CAP-2":
		return need(fc.caps > 0, "no hooks/capabilities exchange")
	case "EDIT-1", "EDIT-2", "EDIT-3", "EDIT-4", "EDIT-5", "EDIT-6", "EDIT-7":
		return need(fc.modifies > 0, "no modify effect in any response")
	case "EDIT-8":
		return need(fc.elicitations > 0 && fc.modifies > 0, "no modify effect at a user.elicitation event")
	}
	return true, ""
}
