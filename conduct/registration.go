package conduct

import "github.com/ahp-tap/ahp-tap/tap"

// A hook is one backend entry of the registration, as the timeline needs
// it: its position in the hooks array and its subscriptions.
type hook struct {
	id     string
	pos    int // index in the registration's hooks array (AHP-COMP-001 order)
	entry  *tap.Value
	tapped bool
}

// An interceptor is the first intercept subscription of one hook that
// matches an event type.
type interceptor struct {
	hook *hook
	sub  *tap.Value
	// filtered: the subscription has filters, so it may not receive an
	// event of its type; a chain that skips it is no finding.
	filtered bool
}

// registration is the registration's hooks in order.
type registration struct {
	hooks []*hook
	byID  map[string]*hook
}

func newRegistration(doc *tap.Value, tapped []string) *registration {
	r := &registration{byID: map[string]*hook{}}
	for i, h := range doc.Get("hooks").Elems() {
		id, _ := h.Get("id").Text()
		hk := &hook{id: id, pos: i, entry: h}
		r.hooks = append(r.hooks, hk)
		if _, dup := r.byID[id]; !dup {
			r.byID[id] = hk
		}
	}
	for _, id := range tapped {
		if h := r.byID[id]; h != nil {
			h.tapped = true
		}
	}
	return r
}

// interceptors lists, in registration order, the hooks with an intercept
// subscription matching eventType.
func (r *registration) interceptors(eventType string) []interceptor {
	var out []interceptor
	for _, h := range r.hooks {
		if s := tap.MatchSubscription(h.entry, eventType, "intercept"); s != nil {
			out = append(out, interceptor{hook: h, sub: s, filtered: s.Has("filters")})
		}
	}
	return out
}

// observes reports whether hook h has an observe subscription of its own
// for eventType.
func (h *hook) observes(eventType string) bool {
	return tap.MatchSubscription(h.entry, eventType, "observe") != nil
}

// untapped lists the hooks among is that no link of the timeline taps.
func untapped(is []interceptor) []string {
	var out []string
	for _, i := range is {
		if !i.hook.tapped {
			out = append(out, i.hook.id)
		}
	}
	return out
}
