package rules

import (
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// A Scope is what the catalogue knows about one check beyond its wording:
// whose behaviour it judges, what configuration it needs, and what
// traffic exercises it. Coverage evaluates it against a session's Facts;
// every report format, live summary and claim matrix reads that one
// answer.
type Scope struct {
	// Judges is the role whose behaviour the check judges; JudgesSender
	// when a finding judges whoever sent its frame.
	Judges Role
	// Binding, when set, is the only transport the check applies to:
	// other traffic does not exercise it.
	Binding tap.Transport
	// Needs is the configuration the check cannot be made without.
	Needs Need
	// By is the traffic that exercises the check.
	By Exercise
}

// A Role is a party a check judges.
type Role string

// The roles a check can judge.
const (
	JudgesSender  Role = ""
	JudgesHarness Role = "harness"
	JudgesBackend Role = "backend"
)

// A Need is configuration a check cannot be made without (a bit set).
type Need uint

// The configuration checks need.
const (
	// NeedHook: a registration with a hook selected (dispatch).
	NeedHook Need = 1 << iota
	// NeedDeadline: --timeout or a subscription's timeoutMs.
	NeedDeadline
	// NeedPerEvent, NeedPersistent: the stdio lifecycle.
	NeedPerEvent
	NeedPersistent
	// NeedSharedPerEvent: with the per_event lifecycle, an event store
	// shared across processes (--state DIR), or retries across processes
	// are not seen.
	NeedSharedPerEvent
)

// An Exercise is the traffic that exercises a check.
type Exercise int

// What exercises a check.
const (
	// ByFrame: any frame.
	ByFrame Exercise = iota
	// ByAnything: the check is about the audit itself (TAP-*): always
	// exercised.
	ByAnything
	// ByEvent: a frame carrying an event.
	ByEvent
	// ByBackendAnswer: a response from the backend, or a notification it
	// could wrongly answer.
	ByBackendAnswer
	// ByIntercept: a hooks/intercept request.
	ByIntercept
	// ByEffects: a successful result carrying effects.
	ByEffects
	// ByCapabilities: a hooks/capabilities exchange.
	ByCapabilities
	// ByContent: content that is judged wherever it travels: an event or
	// a modify effect.
	ByContent
	// ByModify: a modify effect in a response.
	ByModify
	// ByElicitation: a user.elicitation.* event.
	ByElicitation
	// ByAnswer: a response to time.
	ByAnswer
	// ByConduct: the captures of a registration's backends replayed
	// together (a conduct timeline), not one link.
	ByConduct
)

// A CoverState says what a check could conclude on some traffic.
type CoverState int

// The coverage states, from the least to the most conclusive.
const (
	// NotChecked: the configuration cannot make the check (no deadline,
	// no registration, another lifecycle).
	NotChecked CoverState = iota
	// NotExercised: the check could be made, but the traffic held
	// nothing it judges.
	NotExercised
	// Exercised: the traffic held something the check judged.
	Exercised
)

// Coverage says whether check could be made on a session with facts f,
// whether the traffic exercised it, and when not, why not. A finding
// under the check means it was exercised whatever this says.
func Coverage(c Check, f tap.Facts) (CoverState, string) {
	s := c.Scope
	if s.By == ByAnything {
		return Exercised, ""
	}
	if s.By == ByConduct && !f.Conduct {
		return NotExercised, "one link only: conduct is judged when the captures of a registration's backends are replayed together"
	}
	if s.Binding != "" && f.Transport != s.Binding {
		name := string(s.Binding)
		if s.Binding == tap.HTTP {
			name = "HTTP"
		}
		return NotExercised, "no " + name + " traffic"
	}
	if st, why := needs(s.Needs, f); why != "" {
		if f.Transport == tap.File {
			// A standalone message is an excerpt of no link: what no
			// configuration could judge in it is not exercised, and no
			// summary lists it as not checked.
			st = NotExercised
		}
		return st, why
	}
	if f.Frames == 0 {
		return NotExercised, "the input held no frames"
	}
	ok, why := true, ""
	switch s.By {
	case ByEvent:
		ok, why = f.Events > 0, "no event in the traffic"
	case ByBackendAnswer:
		ok, why = f.Backend > 0 && (f.Answers > 0 || f.Observes > 0), "no backend answer to judge"
	case ByIntercept:
		ok, why = f.Intercepts > 0, "no hooks/intercept request"
	case ByEffects:
		ok, why = f.Effects > 0, "no successful hooks/intercept result with effects"
	case ByCapabilities:
		ok, why = f.Capabilities > 0, "no hooks/capabilities exchange"
	case ByContent:
		ok, why = f.Events > 0 || f.Modifies > 0, "no event and no modify effect"
	case ByModify:
		ok, why = f.Modifies > 0, "no modify effect in any response"
	case ByElicitation:
		ok, why = f.Elicitations > 0, "no user.elicitation event"
	case ByAnswer:
		ok, why = f.Answers > 0, "no response to time"
	}
	if !ok {
		return NotExercised, why
	}
	return Exercised, ""
}

// needs says why the configuration f cannot make a check that needs n
// ("" when it can).
func needs(n Need, f tap.Facts) (CoverState, string) {
	switch {
	case n&NeedHook != 0 && !f.Registration:
		return NotChecked, "no registration: give --registration FILE --hook ID (or capture with them)"
	case n&NeedHook != 0 && !f.Hook:
		return NotChecked, "no hook selected: give --hook ID to check dispatch against its subscriptions"
	case n&NeedDeadline != 0 && !f.Deadline:
		return NotChecked, "no deadline: give --timeout, or --registration/--hook whose subscriptions set timeoutMs"
	case n&(NeedPerEvent|NeedPersistent) != 0 && f.Lifecycle == "":
		return NotChecked, "the lifecycle is unknown: give --registration FILE --hook ID naming the stdio hook (or capture with them; the stdio tap also takes --lifecycle)"
	case n&NeedPerEvent != 0 && f.Lifecycle != vocab.LifecyclePerEvent:
		return NotChecked, "the lifecycle is " + f.Lifecycle
	case n&NeedPersistent != 0 && f.Lifecycle != vocab.LifecyclePersistent:
		return NotChecked, "the lifecycle is " + f.Lifecycle
	case n&NeedSharedPerEvent != 0 && f.Transport == tap.Stdio && f.Lifecycle == vocab.LifecyclePerEvent && !f.SharedEvents:
		return NotChecked, "per_event without --state DIR: retries across processes are not seen"
	}
	return Exercised, ""
}

// NotCheckedFor lists the checks of the catalogue a session with facts f
// cannot make, and why, in catalogue order. A standalone file (Transport
// File) is an excerpt of no link: nothing is listed.
func NotCheckedFor(f tap.Facts) []tap.NotChecked {
	if f.Transport == tap.File {
		return nil
	}
	var out []tap.NotChecked
	for _, c := range Catalogue {
		if st, why := Coverage(c, f); st == NotChecked {
			out = append(out, tap.NotChecked{Check: c.ID, Reason: why})
		}
	}
	return out
}

// NotChecked is tap.CoverageJudge: the checks a session cannot make.
func (r ruleSet) NotChecked(f tap.Facts) []tap.NotChecked { return NotCheckedFor(f) }

// JudgesRole reports whether a finding under check id, about a frame sent
// by sender, is evidence about role ("harness", "backend" or "both").
func JudgesRole(id string, sender tap.Direction, role string) bool {
	if role == "both" {
		return true
	}
	c, ok := CheckByID(id)
	if !ok {
		return true
	}
	if c.Scope.Judges == JudgesSender {
		return sender == 0 || sender.String() == role
	}
	return string(c.Scope.Judges) == role
}

// CheckJudgesRole reports whether check id judges role at all (a claim
// row lists the checks that can give evidence about the claimed role).
func CheckJudgesRole(id, role string) bool {
	c, ok := CheckByID(id)
	if !ok {
		return true
	}
	return role == "both" || c.Scope.Judges == JudgesSender || string(c.Scope.Judges) == role
}

// ScopeText says a check's Scope for people: whom it judges, what it
// needs and what exercises it (docs/checks.md).
func ScopeText(s Scope) string {
	judges := map[Role]string{JudgesSender: "whoever sent the frame", JudgesHarness: "the harness", JudgesBackend: "the backend"}[s.Judges]
	var needs []string
	if s.Binding != "" {
		name := string(s.Binding)
		if s.Binding == tap.HTTP {
			name = "HTTP"
		}
		needs = append(needs, name+" traffic")
	}
	for _, n := range []struct {
		bit  Need
		text string
	}{{NeedHook, "a registration and a hook (--registration, --hook)"}, {NeedDeadline, "a deadline (--timeout, or the hook's timeoutMs)"},
		{NeedPerEvent, "the per_event lifecycle"}, {NeedPersistent, "the persistent lifecycle"},
		{NeedSharedPerEvent, "with per_event, a shared --state DIR"}} {
		if s.Needs&n.bit != 0 {
			needs = append(needs, n.text)
		}
	}
	need := "nothing"
	if len(needs) > 0 {
		need = strings.Join(needs, "; ")
	}
	by := map[Exercise]string{ByFrame: "any frame", ByAnything: "any run (a fact about the audit)", ByEvent: "an event",
		ByBackendAnswer: "a backend answer, or a notification it could answer", ByIntercept: "a hooks/intercept request",
		ByEffects: "an intercept result with effects", ByCapabilities: "a hooks/capabilities exchange",
		ByContent: "an event or a modify effect", ByModify: "a modify effect", ByElicitation: "a user.elicitation.* event",
		ByAnswer: "a response (timed against the deadline)", ByConduct: "the captures of a registration's backends replayed together"}[s.By]
	return "Judges: " + judges + " · Needs: " + need + " · Exercised by: " + by
}
