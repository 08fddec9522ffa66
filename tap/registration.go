package tap

import "strings"

// FindHook returns the backend entry of a registration document whose id is
// hookID, or nil.
func FindHook(reg *Value, hookID string) *Value {
	for _, h := range reg.Get("hooks").arr() {
		if id, _ := h.Get("id").Text(); id == hookID {
			return h
		}
	}
	return nil
}

// MatchSubscription returns the first subscription of hook whose mode is
// mode and whose events name eventType exactly, by its family wildcard
// ("tool.*") or by "*" (AHP-REG-002). It returns nil when none does.
func MatchSubscription(hook *Value, eventType, mode string) *Value {
	for _, s := range hook.Get("subscriptions").arr() {
		if m, _ := s.Get("mode").Text(); m != mode {
			continue
		}
		for _, e := range s.Get("events").arr() {
			if name, ok := e.Text(); ok && EventPatternMatches(name, eventType) {
				return s
			}
		}
	}
	return nil
}

// EventPatternMatches reports whether a subscription events entry (an exact
// name, "family.*" or "*") covers eventType.
func EventPatternMatches(pattern, eventType string) bool {
	switch {
	case pattern == "*":
		return true
	case strings.HasSuffix(pattern, ".*"):
		return strings.HasPrefix(eventType, strings.TrimSuffix(pattern, "*"))
	}
	return pattern == eventType
}

// arr returns the elements of an array value, or nil.
func (v *Value) arr() []*Value {
	if v == nil || v.Kind != Array {
		return nil
	}
	return v.Arr
}

// Elems returns the elements of an array value, or nil when v is not an array.
func (v *Value) Elems() []*Value { return v.arr() }
