package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// harnessRule checks BASE-8, a Base Protocol profile rule with no AHP
// requirement ID: every event, observed or intercepted, carries harness
// with non-empty string name and version, also without an earlier
// session.start (§3.4). A whitespace-only name or version counts as empty.
type harnessRule struct{ info tap.RuleInfo }

func harnessRules() []tap.Rule {
	return []tap.Rule{harnessRule{info("BASE-8/harness", vocab.Base8,
		"every event carries harness with non-empty string name and version")}}
}

func (r harnessRule) Info() tap.RuleInfo { return r.info }

func (r harnessRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	ev := f.Event()
	if !ev.Is(tap.Object) {
		return nil // no event here, or EVT-1 reports its shape
	}
	const ptr = "/params/event/harness"
	h := ev.Get("harness")
	switch {
	case h == nil:
		return []tap.Finding{r.info.At(f, 0, ptr, "the event has no harness; every event must carry harness{name, version} naming the originating harness (Base Protocol profile)")}
	case !h.Is(tap.Object):
		return []tap.Finding{r.info.At(f, 0, ptr, "event harness is %s; it must be an object with non-empty string name and version", h.Describe())}
	}
	var out []tap.Finding
	for _, k := range []string{"name", "version"} {
		v := h.Get(k)
		s, ok := v.Text()
		switch {
		case v == nil:
			out = append(out, r.info.At(f, 0, ptr+"/"+k, "event harness has no %s; it must be a non-empty string", k))
		case !ok:
			out = append(out, r.info.At(f, 0, ptr+"/"+k, "event harness.%s is %s; it must be a non-empty string", k, v.Describe()))
		case strings.TrimSpace(s) == "":
			out = append(out, r.info.At(f, 0, ptr+"/"+k, "event harness.%s is empty or only white space; it must name the harness", k))
		}
	}
	return out
}
