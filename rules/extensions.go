package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"regexp"

	"github.com/ahp-tap/ahp-tap/tap"
)

// reverseDNSName is the AHP-EXT-001 pattern for extension keys, deny codes,
// extension effect names and backend ids (§6.4, §5).
var reverseDNSName = regexp.MustCompile(`^(?:[A-Za-z][A-Za-z0-9_-]*\.)+[A-Za-z][A-Za-z0-9_-]*$`)

// extensionRule checks BASE-4 (AHP-EXT-001): every key of every extensions
// object, every deny.code and every extension effect name is reverse-DNS.
//
// It looks where the protocol defines extensions (the event, intercept
// params, results, deny effects) and capability effect lists (request
// capabilities and manifests), not inside opaque data: a tool input with an
// "extensions" member is the tool's business.
type extensionRule struct{ info tap.RuleInfo }

func extensionRules() []tap.Rule {
	return []tap.Rule{extensionRule{info("BASE-4/reverse-dns", vocab.Base4,
		"extension keys, deny codes and extension effect names are reverse-DNS")}}
}

func (r extensionRule) Info() tap.RuleInfo { return r.info }

func (r extensionRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	var out []tap.Finding
	keys := func(v *tap.Value, ptr string) {
		for _, m := range objMembers(v.Get("extensions")) {
			if !reverseDNSName.MatchString(m.Key) {
				out = append(out, r.info.At(f, 0, tap.Ptr(ptr, "extensions", m.Key),
					"extension key %s is not a reverse-DNS name (such as com.example.policy)", quoted(m.Key)))
			}
		}
	}
	effectNames := func(caps *tap.Value, ptr string) {
		for i, e := range caps.Get("effects").Elems() {
			if s, ok := e.Text(); ok && !coreEffectNames[s] && !reverseDNSName.MatchString(s) {
				out = append(out, r.info.At(f, 0, tap.Ptr(ptr, "effects", i),
					"capabilities.effects entry %s is neither a core effect type nor a reverse-DNS extension effect name", quoted(s)))
			}
		}
	}
	manifest := func(man *tap.Value, ptr string) {
		for i, e := range man.Get("events").Elems() {
			effectNames(e.Get("capabilities"), tap.Ptr(ptr, "events", i, "capabilities"))
		}
	}
	switch m := f.Msg.(type) {
	case *tap.Request, *tap.Notification:
		p := f.Params()
		if f.Method() == methodIntercept {
			keys(p, "/params") // only intercept params define extensions
		}
		ev := p.Get("event")
		keys(ev, "/params/event")
		if f.Method() == methodIntercept {
			effectNames(p.Get("capabilities"), "/params/capabilities")
		}
		if t, _ := ev.Get("type").Text(); t == "session.start" {
			manifest(ev.Get("manifest"), "/params/event/manifest")
		}
	case *tap.Response:
		res := m.Result
		if m.Error != nil {
			return nil
		}
		// Only intercept results define extensions; in an excerpt, a
		// result with effects is one.
		if x := c.Exchange(); (x != nil && x.Method == methodIntercept) || (x == nil && res.Has("effects")) {
			keys(res, "/result")
		}
		manifest(res.Get("manifest"), "/result/manifest")
		for i, e := range res.Get("effects").Elems() {
			if t, _ := e.Get("type").Text(); t != "deny" {
				continue
			}
			// The effect's pointer is built only when there is something
			// to report at it (a deny is in one response in four).
			if e.Has("extensions") {
				keys(e, tap.Ptr("/result/effects", i))
			}
			if code := e.Get("code"); code != nil {
				if s, ok := code.Text(); !ok || !reverseDNSName.MatchString(s) {
					out = append(out, r.info.At(f, 0, tap.Ptr("/result/effects", i, "code"),
						"deny.code is %s; it must be a reverse-DNS name (such as com.example.policy.protected_path)", show(code)))
				}
			}
		}
	}
	return out
}

// objMembers returns the members of an object value, or nil for anything else
// (absent included).
func objMembers(v *tap.Value) []tap.Member {
	if !v.Is(tap.Object) {
		return nil
	}
	return v.Obj
}
