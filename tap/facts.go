package tap

import (
	"strings"

	"github.com/ahp-tap/ahp-tap/vocab"
)

// Facts are what a session knows about its configuration and the traffic
// it judged: enough to say, per check, whether the check could be made at
// all (a deadline, a registration, a lifecycle) and whether the traffic
// exercised it. The catalogue (rules.Catalogue, each check's Scope) reads
// them; every report, live summary and claim matrix takes its "passed /
// not exercised / not checked" from that one evaluation.
type Facts struct {
	// Transport is the session's binding (File: standalone messages).
	Transport Transport
	// Registration is set when a registration document was given;
	// Hook when a hook of it is selected.
	Registration, Hook bool
	// Deadline is set when a response deadline is known: --timeout, or a
	// subscription of the selected hook with timeoutMs.
	Deadline bool
	// Lifecycle is the stdio lifecycle ("" unknown).
	Lifecycle string
	// SharedEvents is set when the event store outlives one process (a
	// --state directory, or a replay's store shared across segments).
	SharedEvents bool
	// Conduct is set for a conduct timeline across the links of a
	// registration (not a Session's fact: the conduct package's).
	Conduct bool

	// Traffic, counted over the frames the session judged.
	Frames, Harness, Backend int
	// Intercepts, Observes and Capabilities count requests and
	// notifications by method; Events the frames carrying params.event,
	// Elicitations those of a user.elicitation.* event.
	Intercepts, Observes, Capabilities int
	Events, Elicitations               int
	// Answers counts responses (results and errors); Effects successful
	// results carrying an effects array; Modifies those with a modify
	// effect.
	Answers, Effects, Modifies int
}

// Facts returns what the session knows so far about its configuration and
// its traffic.
func (s *Session) Facts() Facts {
	f := s.facts
	cfg := s.cfg.Config
	f.Transport = cfg.Transport
	f.Registration = cfg.Registration != nil
	f.Hook = cfg.Registration != nil && cfg.HookID != ""
	f.Deadline = cfg.Timeout > 0 || hookHasDeadline(FindHook(cfg.Registration, cfg.HookID))
	f.Lifecycle = cfg.Lifecycle
	f.SharedEvents = s.sharedEvents()
	return f
}

// add counts a judged (decoded) frame.
func (f *Facts) add(fr *Frame) {
	f.Frames++
	switch fr.Dir {
	case FromHarness:
		f.Harness++
	case FromBackend:
		f.Backend++
	}
	switch fr.Method() {
	case vocab.MethodIntercept:
		f.Intercepts++
	case vocab.MethodObserve:
		f.Observes++
	case vocab.MethodCapabilities:
		f.Capabilities++
	}
	if ev := fr.Event(); ev != nil {
		f.Events++
		if t, _ := ev.Get("type").Text(); strings.HasPrefix(t, "user.elicitation") {
			f.Elicitations++
		}
	}
	if m, ok := fr.Msg.(*Response); ok {
		f.Answers++
		if m.Error == nil {
			if effs := m.Result.Get("effects"); effs.Is(Array) {
				f.Effects++
				for _, e := range effs.Arr {
					if t, _ := e.Get("type").Text(); t == vocab.EffectModify {
						f.Modifies++
						break
					}
				}
			}
		}
	}
}
