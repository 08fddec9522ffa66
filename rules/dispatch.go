package rules

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// dispatchRule checks BASE-5 dispatch (AHP-REG-002): with a registration and
// a selected hook, every event reaching this backend is covered by one of
// its subscriptions whose events name the event type (exactly, by family
// wildcard or by "*") and whose mode matches the method. The one exception
// (§4.5) is the best-effort hooks/observe a short-circuited chain sends to an
// uncalled intercept subscription: reported as info, for the reader.
type dispatchRule struct{ info tap.RuleInfo }

func dispatchRules() []tap.Rule {
	return []tap.Rule{dispatchRule{info("BASE-5/dispatch", "BASE-5",
		"every event reaching the backend matches a subscription's events and mode")}}
}

func (r dispatchRule) Info() tap.RuleInfo { return r.info }

func (r dispatchRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if c.Hook == nil {
		return nil
	}
	t, ok := f.Event().Get("type").Text()
	if !ok {
		return nil
	}
	hookID, _ := c.Hook.Get("id").Text()
	switch f.Method() {
	case methodIntercept:
		if _, isReq := f.Msg.(*tap.Request); !isReq || c.SubscriptionFor(t, "intercept") != nil {
			return nil
		}
		if c.SubscriptionFor(t, "observe") != nil {
			return []tap.Finding{r.info.At(f, 0, "/method", "%s was sent to backend %s by hooks/intercept, but the backend subscribes to it only in observe mode", t, quoted(hookID))}
		}
		return []tap.Finding{r.info.At(f, 0, "/params/event/type", "%s was sent to backend %s by hooks/intercept, but none of its intercept subscriptions names that event", t, quoted(hookID))}
	case methodObserve:
		if _, isNote := f.Msg.(*tap.Notification); !isNote || c.SubscriptionFor(t, "observe") != nil {
			return nil
		}
		if c.SubscriptionFor(t, "intercept") != nil {
			return []tap.Finding{r.info.At(f, tap.Info, "/method", "%s was observed by backend %s, which subscribes to it only in intercept mode: allowed only as the best-effort observation after a short-circuited chain (§4.5)", t, quoted(hookID))}
		}
		return []tap.Finding{r.info.At(f, 0, "/params/event/type", "%s was sent to backend %s by hooks/observe, but none of its subscriptions names that event", t, quoted(hookID))}
	}
	return nil
}

// registrationInfo is the rule RegistrationFindings reports under.
var registrationInfo = info("BASE-5/registration", "BASE-5",
	"the registration document is valid before use (§5)")

// RegistrationFindings validates a registration document as in §5
// (BASE-5, AHP-REG-001/002) against the default snapshot and returns its
// findings. Unknown fields are ignored; a literal credential is not.
func RegistrationFindings(reg *tap.Value) []tap.Finding {
	return RegistrationFindingsFor(reg, tap.DefaultSnapshot)
}

// RegistrationFindingsFor is RegistrationFindings for the given snapshot.
func RegistrationFindingsFor(reg *tap.Value, snapshot string) []tap.Finding {
	v := regValidator{snapshot: snapshot}
	v.duplicates(reg, "")
	v.document(reg)
	return v.out
}

// duplicates reports every object member whose name its object already
// used (issue 22). Duplicate keys are invalid JSON for AHP everywhere
// (BASE-1 on the wire), and a registration with them has no one meaning:
// a subscription with failurePolicy twice is fail-open to one parser and
// fail-closed to another. The decoded document keeps every member in wire
// order, so the walk sees them all.
func (v *regValidator) duplicates(doc *tap.Value, ptr string) {
	switch {
	case doc.Is(tap.Object):
		seen := make(map[string]bool, len(doc.Obj))
		for _, m := range doc.Obj {
			mp := tap.Ptr(ptr, m.Key)
			if seen[m.Key] {
				v.add(mp, "member %s appears more than once in this object; duplicate keys are invalid, and parsers disagree on which one the harness would use", quoted(m.Key))
			}
			seen[m.Key] = true
			v.duplicates(m.Val, mp)
		}
	case doc.Is(tap.Array):
		for i, e := range doc.Arr {
			v.duplicates(e, tap.Ptr(ptr, i))
		}
	}
}

// Registration vocabularies (registration.schema, content-selection.schema).
var (
	subscriptionPattern = regexp.MustCompile(`^(?:\*|[a-z][a-z0-9]*\.\*)$`)
	tokenEnvPattern     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	uploadEndpoint      = regexp.MustCompile(`^(?:https://|http://(?:localhost|127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}|\[::1\])(?::[0-9]+)?(?:[/?#]|$))`)
	selectionValues     = []string{"body", "metadata", "omit"}
	// literalCredentialKeys are keys that would hold a secret itself
	// rather than a reference to it (the 0.1 schema banned the first three).
	literalCredentialKeys = []string{"token", "bearerToken", "value", "secret", "password", "clientSecret", "accessToken"}
)

type regValidator struct {
	snapshot string
	out      []tap.Finding
	hinted   bool // the older-draft hint was given (once per document)
}

func (v *regValidator) add(ptr, format string, args ...any) {
	v.out = append(v.out, registrationInfo.At(nil, 0, ptr, format, args...))
}

// addOlder is add for a fault whose shape matches the older draft d: the
// document's first such finding names it.
func (v *regValidator) addOlder(d olderDraft, ptr, format string, args ...any) {
	v.add(ptr, format, args...)
	if !v.hinted {
		v.hinted = true
		v.out[len(v.out)-1] = withOlderDraft(v.out[len(v.out)-1], d, "the registration may follow an older schema revision")
	}
}

func (v *regValidator) document(reg *tap.Value) {
	if !reg.Is(tap.Object) {
		v.add("", "a registration document must be a JSON object with protocolVersion and hooks, found %s", reg.Describe())
		return
	}
	// AHP-REG-001: the registration declares the snapshot.
	switch pv := reg.Get("protocolVersion"); {
	case pv == nil:
		v.add("/protocolVersion", "the registration has no protocolVersion; it must declare %s", quoted(v.snapshot))
	case !stringIn(pv, v.snapshot):
		v.add("/protocolVersion", "registration protocolVersion is %s, expected %s", show(pv), quoted(v.snapshot))
	}
	hooks := reg.Get("hooks")
	switch {
	case hooks == nil:
		v.add("/hooks", "the registration has no hooks; it must list at least one backend in order")
		return
	case !hooks.Is(tap.Array):
		v.add("/hooks", "registration hooks is %s; it must be an ordered array of backends", hooks.Describe())
		return
	case len(hooks.Arr) == 0:
		v.add("/hooks", "registration hooks is empty; it must list at least one backend")
	}
	ids := make(map[string]int)
	for i, h := range hooks.Arr {
		ptr := tap.Ptr("/hooks", i)
		v.backend(h, ptr)
		if id, ok := h.Get("id").Text(); ok {
			if j, dup := ids[id]; dup {
				v.add(ptr+"/id", "backend id %s is already used by /hooks/%d; backend ids are unique", quoted(id), j)
			} else {
				ids[id] = i
			}
		}
	}
}

func (v *regValidator) backend(h *tap.Value, ptr string) {
	if !h.Is(tap.Object) {
		v.add(ptr, "a backend entry must be an object, found %s", h.Describe())
		return
	}
	switch id := h.Get("id"); {
	case id == nil:
		v.add(ptr+"/id", "the backend has no id; it needs a reverse-DNS id such as com.example.policy")
	case !id.Is(tap.String) || !reverseDNSName.MatchString(id.Str):
		v.add(ptr+"/id", "backend id %s is not a reverse-DNS name (such as com.example.policy)", show(id))
	}
	kind := v.transport(h.Get("transport"), ptr+"/transport")
	if a := h.Get("authentication"); a != nil {
		if kind == "stdio" {
			v.add(ptr+"/authentication", "a stdio backend must not have authentication; credentials are for HTTP endpoints only")
		}
		v.authentication(a, ptr+"/authentication")
	}
	if h.Has("contentReceiver") {
		v.add(ptr+"/contentReceiver", "a backend-level contentReceiver is not allowed; uploads are configured per subscription (upload)")
	}
	subs := h.Get("subscriptions")
	switch {
	case subs == nil:
		v.add(ptr+"/subscriptions", "the backend has no subscriptions; it needs at least one")
		return
	case !subs.Is(tap.Array):
		v.add(ptr+"/subscriptions", "subscriptions is %s; it must be an array", subs.Describe())
		return
	case len(subs.Arr) == 0:
		v.add(ptr+"/subscriptions", "subscriptions is empty; a backend needs at least one")
	}
	for i, s := range subs.Arr {
		v.subscription(s, tap.Ptr(ptr+"/subscriptions", i))
	}
}

// transport validates a transport and returns its type ("" when unknown).
func (v *regValidator) transport(t *tap.Value, ptr string) string {
	if !t.Is(tap.Object) {
		v.add(ptr, "the backend transport must be an object (stdio or http), found %s", t.Describe())
		return ""
	}
	typ, _ := t.Get("type").Text()
	switch typ {
	case "stdio":
		if s, ok := t.Get("command").Text(); !ok || s == "" {
			v.add(ptr+"/command", "a stdio transport needs a non-empty command string, found %s", show(t.Get("command")))
		}
		if a := t.Get("args"); a != nil {
			if !a.Is(tap.Array) {
				v.add(ptr+"/args", "transport args must be an array of strings, found %s", a.Describe())
			}
			for i, e := range a.Elems() {
				if !e.Is(tap.String) {
					v.add(tap.Ptr(ptr+"/args", i), "transport args must be strings, found %s", e.Describe())
				}
			}
		}
		if l := t.Get("lifecycle"); !stringIn(l, "persistent", "per_event") {
			v.add(ptr+"/lifecycle", "a stdio transport needs lifecycle persistent or per_event, found %s", show(l))
		}
		if c := t.Get("cwd"); c != nil && !c.Is(tap.String) {
			v.add(ptr+"/cwd", "transport cwd must be a string, found %s", c.Describe())
		}
	case "http":
		u, ok := t.Get("url").Text()
		if !ok || !absoluteHTTP(u, "http://", "https://") {
			v.add(ptr+"/url", "an http transport needs an absolute http:// or https:// url, found %s", show(t.Get("url")))
		}
	default:
		v.add(ptr+"/type", "transport type must be stdio or http, found %s", show(t.Get("type")))
	}
	return typ
}

func (v *regValidator) authentication(a *tap.Value, ptr string) {
	if !a.Is(tap.Object) {
		v.add(ptr, "authentication must be an object (bearer or oauth), found %s", a.Describe())
		return
	}
	// AHP-AUTH-001, AHP-SEC-001: never a literal credential; the message
	// names the key only, never its value.
	for _, k := range literalCredentialKeys {
		if a.Has(k) {
			v.add(ptr+"/"+k, "authentication.%s holds a literal credential; a registration may only reference a secret (tokenEnv, tokenRef, clientSecretRef)", k)
		}
	}
	switch typ, _ := a.Get("type").Text(); typ {
	case "bearer":
		env, ref := a.Get("tokenEnv"), a.Get("tokenRef")
		switch {
		case env == nil && ref == nil:
			v.add(ptr, "bearer authentication needs exactly one of tokenEnv or tokenRef")
		case env != nil && ref != nil:
			v.add(ptr, "bearer authentication has both tokenEnv and tokenRef; it needs exactly one")
		case env != nil && (!env.Is(tap.String) || !tokenEnvPattern.MatchString(env.Str)):
			v.add(ptr+"/tokenEnv", "tokenEnv must name an environment variable (letters, digits, _), found %s", show(env))
		case ref != nil && !nonEmptyText(ref):
			v.add(ptr+"/tokenRef", "tokenRef must be a non-empty string, found %s", show(ref))
		}
	case "oauth":
		for _, k := range []string{"resource", "clientId"} {
			if !nonEmptyText(a.Get(k)) {
				v.add(ptr+"/"+k, "oauth authentication needs a non-empty %s string, found %s", k, show(a.Get(k)))
			}
		}
		if s, ok := a.Get("issuer").Text(); !ok || !absoluteHTTP(s, "https://") {
			v.add(ptr+"/issuer", "oauth issuer must be an absolute https:// URL, found %s", show(a.Get("issuer")))
		}
		if fl := a.Get("flow"); !stringIn(fl, "authorization_code_pkce", "client_credentials") {
			v.add(ptr+"/flow", "oauth flow must be authorization_code_pkce or client_credentials, found %s", show(fl))
		}
		if s := a.Get("clientSecretRef"); s != nil && !nonEmptyText(s) {
			v.add(ptr+"/clientSecretRef", "clientSecretRef must be a non-empty string, found %s", show(s))
		}
		if s := a.Get("scopes"); s != nil {
			v.uniqueStrings(s, ptr+"/scopes", "oauth scopes")
		}
	case "mtls", "workload":
		v.addOlder(draftWithWorkloadAuth, ptr+"/type", "authentication type must be bearer or oauth (the portable bindings), found %s", show(a.Get("type")))
	default:
		v.add(ptr+"/type", "authentication type must be bearer or oauth (the portable bindings), found %s", show(a.Get("type")))
	}
}

func (v *regValidator) subscription(s *tap.Value, ptr string) {
	if !s.Is(tap.Object) {
		v.add(ptr, "a subscription must be an object, found %s", s.Describe())
		return
	}
	mode, _ := s.Get("mode").Text()
	switch mode {
	case "intercept":
		// AHP-FAIL-001, AHP-FAIL-002: no default policy, no default deadline.
		switch t := s.Get("timeoutMs"); {
		case t == nil:
			v.add(ptr+"/timeoutMs", "an intercept subscription needs timeoutMs (a positive integer of milliseconds)")
		default:
			if !intAtLeast(t, 1) {
				v.add(ptr+"/timeoutMs", "timeoutMs must be a positive integer, found %s", show(t))
			}
		}
		if p := s.Get("failurePolicy"); !stringIn(p, "fail-open", "fail-closed") {
			v.add(ptr+"/failurePolicy", "an intercept subscription needs failurePolicy fail-open or fail-closed (there is no default), found %s", show(p))
		}
	case "observe":
		for _, k := range []string{"timeoutMs", "failurePolicy"} {
			if s.Has(k) {
				v.add(ptr+"/"+k, "an observe subscription must not have %s; observers never delay or decide", k)
			}
		}
	default:
		v.add(ptr+"/mode", "subscription mode must be intercept or observe, found %s", show(s.Get("mode")))
	}
	v.events(s.Get("events"), ptr+"/events", mode)
	v.content(s.Get("content"), ptr+"/content")
	if n := s.Get("includeNative"); n != nil && !n.Is(tap.Bool) {
		v.add(ptr+"/includeNative", "includeNative must be a boolean, found %s", n.Describe())
	}
	if u := s.Get("upload"); u != nil {
		v.upload(u, ptr+"/upload")
	}
	if fl := s.Get("filters"); fl != nil {
		if !fl.Is(tap.Object) {
			v.add(ptr+"/filters", "filters must be an object, found %s", fl.Describe())
		}
		for _, k := range []string{"toolKinds", "paths"} {
			if a := fl.Get(k); a != nil {
				v.uniqueStrings(a, ptr+"/filters/"+k, "filters."+k)
			}
		}
	}
	scope := s.Get("scope")
	if scope != nil && !stringIn(scope, "managed", "project", "user") {
		v.add(ptr+"/scope", "scope must be managed, project or user, found %s", show(scope))
	}
	d := s.Get("disableable")
	if d != nil && !d.Is(tap.Bool) {
		v.add(ptr+"/disableable", "disableable must be a boolean, found %s", d.Describe())
	}
	if stringIn(scope, "managed") && (d == nil || !d.Is(tap.Bool) || d.Bool) {
		v.add(ptr+"/disableable", "a managed subscription needs disableable: false")
	}
}

func (v *regValidator) events(ev *tap.Value, ptr, mode string) {
	switch {
	case ev == nil:
		v.add(ptr, "the subscription has no events; it must name at least one event type")
		return
	case !ev.Is(tap.Array):
		v.add(ptr, "subscription events must be an array of event names, found %s", ev.Describe())
		return
	case len(ev.Arr) == 0:
		v.add(ptr, "subscription events is empty; it must name at least one event type")
	}
	seen := make(map[string]bool)
	for i, e := range ev.Arr {
		p := tap.Ptr(ptr, i)
		name, ok := e.Text()
		if !ok {
			v.add(p, "an events entry must be a string, found %s", e.Describe())
			continue
		}
		if seen[name] {
			v.add(p, "event %s is listed twice; events are unique", quoted(name))
		}
		seen[name] = true
		if subscriptionPattern.MatchString(name) {
			continue // "*" or "family.*"
		}
		interceptable, known := wireEvents[name]
		switch {
		case !known:
			v.add(p, "%s is neither an AHP event type nor a wildcard (\"*\" or \"family.*\")", quoted(name))
		case mode == "intercept" && !interceptable:
			v.add(p, "%s is observe-only; an intercept subscription may name only interceptable events", name)
		}
	}
}

func (v *regValidator) content(c *tap.Value, ptr string) {
	if c == nil {
		v.add(ptr, "the subscription has no content selection; it needs content with at least default (body, metadata or omit)")
		return
	}
	if !c.Is(tap.Object) {
		v.add(ptr, "content must be an object of category selections, found %s", c.Describe())
		return
	}
	if !c.Has("default") {
		v.add(ptr+"/default", "content needs a default selection (body, metadata or omit)")
	}
	for _, m := range c.Obj {
		if m.Key == "categories" && m.Val.Is(tap.Object) {
			v.addOlder(draftWithWorkloadAuth, tap.Ptr(ptr, m.Key), "content selection is flat: {default, <category>: body, metadata or omit}; a nested \"categories\" object is not a selection")
			continue
		}
		if !stringIn(m.Val, selectionValues...) {
			v.add(tap.Ptr(ptr, m.Key), "content selection for %s must be body, metadata or omit, found %s", quoted(m.Key), show(m.Val))
		}
	}
}

func (v *regValidator) upload(u *tap.Value, ptr string) {
	if !u.Is(tap.Object) {
		v.add(ptr, "upload must be an object, found %s", u.Describe())
		return
	}
	if e, ok := u.Get("endpoint").Text(); !ok || !uploadEndpoint.MatchString(e) || !absoluteHTTP(e, "http://", "https://") {
		v.add(ptr+"/endpoint", "upload endpoint must be an https:// URL (http:// only on loopback), found %s", show(u.Get("endpoint")))
	}
	if !intAtLeast(u.Get("timeoutMs"), 1) {
		v.add(ptr+"/timeoutMs", "upload timeoutMs must be a positive integer, found %s", show(u.Get("timeoutMs")))
	}
	if !intAtLeast(u.Get("maxBytes"), 0) {
		v.add(ptr+"/maxBytes", "upload maxBytes must be an integer of at least 0, found %s", show(u.Get("maxBytes")))
	}
	if a := u.Get("auth"); a != nil {
		v.authentication(a, ptr+"/auth")
	}
}

func (v *regValidator) uniqueStrings(a *tap.Value, ptr, what string) {
	if !a.Is(tap.Array) {
		v.add(ptr, "%s must be an array of non-empty strings, found %s", what, a.Describe())
		return
	}
	seen := make(map[string]bool)
	for i, e := range a.Arr {
		s, ok := e.Text()
		switch {
		case !ok || s == "":
			v.add(tap.Ptr(ptr, i), "%s entries must be non-empty strings, found %s", what, show(e))
		case seen[s]:
			v.add(tap.Ptr(ptr, i), "%s lists %s twice; entries are unique", what, quoted(s))
		}
		seen[s] = true
	}
}

// stringIn reports whether v is a string equal to one of allowed.
func stringIn(v *tap.Value, allowed ...string) bool {
	s, ok := v.Text()
	if !ok {
		return false
	}
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

func nonEmptyText(v *tap.Value) bool {
	s, ok := v.Text()
	return ok && s != ""
}

// absoluteHTTP reports whether s is an absolute URL with a host and one of
// the given scheme prefixes.
func absoluteHTTP(s string, prefixes ...string) bool {
	ok := false
	for _, p := range prefixes {
		ok = ok || strings.HasPrefix(s, p)
	}
	if !ok {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.IsAbs() && u.Host != ""
}

// intAtLeast reports whether v is an integer ≥ min: of any size, compared
// exactly (issue 22: timeoutMs 2^64 is a positive integer).
func intAtLeast(v *tap.Value, min int64) bool {
	c, _ := v.CompareInt(min)
	return v.IsInteger() && c >= 0
}
