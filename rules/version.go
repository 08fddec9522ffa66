package rules

import (
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// versionRule checks BASE-2 (AHP-VER-001): params of every request and
// notification, and every successful result, carry protocolVersion equal to
// the snapshot being audited. Error responses need none (§2.3).
//
// A request with another version is the harness's fault and is reported on
// the request as an error; the backend's -32001 refusal of it is conforming
// and gives no finding (a success answer to it is BASE-7's).
type versionRule struct{ info tap.RuleInfo }

func versionRules() []tap.Rule {
	return []tap.Rule{versionRule{info("BASE-2/version", vocab.Base2,
		"protocolVersion equals the snapshot in every params and every successful result")}}
}

func (r versionRule) Info() tap.RuleInfo { return r.info }

func (r versionRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	switch m := f.Msg.(type) {
	case *tap.Request:
		// The harness's fault, an error; the backend's -32001 refusal of it
		// is the conforming answer.
		return r.check(c, f, m.Params, "/params", "request", "; the harness is at fault, and a backend refusing it with error -32001 is conforming")
	case *tap.Notification:
		return r.check(c, f, m.Params, "/params", "notification", "; the harness is at fault, and the receiver must not act on it (and sends no response)")
	case *tap.Response:
		if m.Error == nil {
			return r.check(c, f, m.Result, "/result", "successful result", "")
		}
	}
	return nil
}

func (r versionRule) check(c *tap.Conversation, f *tap.Frame, obj *tap.Value, base, kind, consequence string) []tap.Finding {
	if !obj.Is(tap.Object) {
		return nil // BASE-1 reports params or result that are not objects
	}
	v := obj.Get("protocolVersion")
	s, ok := v.Text()
	if ok && s == c.Snapshot {
		return nil // the common case: no pointer to build
	}
	ptr := base + "/protocolVersion"
	if v == nil {
		return []tap.Finding{r.info.At(f, 0, ptr, "the %s carries no protocolVersion; it must be %s%s", kind, quoted(c.Snapshot), consequence)}
	}
	fd := r.info.At(f, 0, ptr, "the %s carries protocolVersion %s, expected exactly %s (the snapshot being audited)%s", kind, show(v), quoted(c.Snapshot), consequence)
	if s == "0.1" {
		fd = hintOlderDraft(c, fd, revision01)
	}
	return []tap.Finding{fd}
}
