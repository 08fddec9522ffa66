package rules

import (
	"slices"

	"github.com/ahp-tap/ahp-tap/vocab"
)

// The protocol's vocabulary, in one place: its methods, its event types
// (with whether each may be intercepted), its effect types and modify
// targets, and what each interceptable boundary allows. Every rule reads
// these tables, or a table derived from them below; nothing else lists
// them. vocabulary_test.go checks them against the upstream draft schemas
// and against the event payload specs, so that removing or adding an
// entry here (or upstream) breaks a test.

// The tables themselves live in package vocab (exported, at the bottom of
// the house, so that tap and every other package read the same names);
// these are the names the rules have always used for them.

// The three AHP methods (§2.1).
const (
	methodIntercept    = vocab.MethodIntercept
	methodObserve      = vocab.MethodObserve
	methodCapabilities = vocab.MethodCapabilities
)

var (
	// protocolMethods are the AHP methods, in §2.1 order.
	protocolMethods = vocab.Methods
	// protocolEvents are the 32 standard event types, the 19
	// interceptable ones first.
	protocolEvents = vocab.Events
	// coreEffects are the effect types AHP defines (§4.1).
	coreEffects = vocab.Effects
	// modifyTargets are the targets a modify effect can name (§4.1).
	modifyTargets = vocab.ModifyTargets
	// boundaries maps each interceptable event to what it allows (§4.3).
	boundaries = vocab.Boundaries
)

// ---- derived tables ------------------------------------------------------

var (
	// wireEvents maps every standard event type to whether it is
	// interceptable.
	wireEvents = func() map[string]bool {
		m := make(map[string]bool, len(protocolEvents))
		for _, e := range protocolEvents {
			m[e.Name] = e.Interceptable
		}
		return m
	}()
	// interceptableEvents are the 19 events hooks/intercept may carry.
	interceptableEvents = eventNames(true)
	// eventTypes are the 32 standard event types.
	eventTypes = append(eventNames(true), eventNames(false)...)
	// continueAllowed lists the only events where flow continue may be
	// returned (capability-auth prose bounds, §4.3).
	continueAllowed = func() map[string]bool {
		m := make(map[string]bool)
		for name, b := range boundaries {
			if slices.Contains(b.FlowOps, "continue") {
				m[name] = true
			}
		}
		return m
	}()
	// coreEffectNames is coreEffects as a set; any other name in
	// capabilities.effects is an extension effect and must be reverse-DNS.
	coreEffectNames = func() map[string]bool {
		m := make(map[string]bool, len(coreEffects))
		for _, e := range coreEffects {
			m[e] = true
		}
		return m
	}()
)

func eventNames(interceptable bool) []string {
	var out []string
	for _, e := range protocolEvents {
		if e.Interceptable == interceptable {
			out = append(out, e.Name)
		}
	}
	return out
}
