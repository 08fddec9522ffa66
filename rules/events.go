package rules

import (
	"github.com/ahp-tap/ahp-tap/tap"
)

// EVT-1 (AHP-TB-001, AHP-RPC-002): every event in hooks/intercept and
// hooks/observe has the common envelope (§3.1) and the payload its type
// defines (§3.2–3.3): required and forbidden fields, enums, conditional
// rules and closed nested objects. The top-level envelope is open: unknown
// top-level members are no finding. hooks/intercept carries only the 19
// interceptable events. Content inside events (§8) is checked with the
// content model and reported as EDIT-1/EDIT-2.
//
// Not EVT-1: an unknown event type (BASE-3; its payload is not checked),
// a missing or empty harness (BASE-8), protocolVersion (BASE-2) and the
// naming of extension keys (BASE-4).

func eventRules() []tap.Rule {
	return []tap.Rule{shapeRule(info("EVT-1/event", "EVT-1",
		"event envelope and per-type payload; only interceptable events in hooks/intercept"))}
}

const evt = "EVT-1"

// eventProblems checks params.event (at ptr) of a hooks/intercept request
// (intercept) or a hooks/observe notification.
func eventProblems(ev *tap.Value, ptr string, intercept bool) []problem {
	c := newChecker(ptr)
	checkEvent(c, ev, intercept)
	return c.done()
}

func checkEvent(c *checker, ev *tap.Value, intercept bool) {
	if ev == nil {
		c.report(evt, "params must carry \"event\"")
		return
	}
	if !ev.Is(tap.Object) {
		c.report(evt, "\"event\" must be an object, found %s", ev.Describe())
		return
	}
	typ, isStr := ev.Get("type").Text()
	spec, known := eventSpecs[typ]
	switch {
	case !isStr:
		envelope.members(c, ev)
		return
	case !known:
		// BASE-3 reports the unknown type; only the envelope is checked.
		envelope.members(c, ev)
		return
	}
	if intercept && !spec.interceptable {
		c.reportAt(evt, "type", "%q is an observe-only event; hooks/intercept carries only the 19 interceptable events (send it with hooks/observe)", typ)
	}
	spec.members(c, ev)
}

// An eventSpec is the shape of one event type.
type eventSpec struct {
	obj
	interceptable bool
}

// ---- the common envelope (§3.1) ------------------------------------------

var (
	// gapEntry is an explicit omission {path, reason}; events leave it open.
	gapEntry = (&obj{check: evt, what: "a gap", fields: []field{
		req("path", nonEmpty(evt)), req("reason", nonEmpty(evt)),
	}}).shape()
	gaps = list(evt, 0, gapEntry)

	session = (&obj{check: evt, what: "the session object", fields: []field{
		req("id", nonEmpty(evt)),
		opt("cwd", str(evt)),
		opt("workspaceRoots", list(evt, 0, str(evt))),
		opt("model", str(evt)),
		opt("agent", (&obj{check: evt, what: "the agent object", fields: []field{
			req("id", nonEmpty(evt)), opt("type", str(evt)),
		}}).shape()),
		opt("synthesized", boolean(evt)),
	}}).shape()

	// identity is a closed {id, synthesized?} reference (call, closed turn,
	// item, lastAssistantItem, resumedFrom, batch at tool.batch.after).
	identity = (&obj{check: evt, what: "an identity object {id, synthesized?}", closed: true, fields: []field{
		req("id", nonEmpty(evt)), opt("synthesized", boolean(evt)),
	}}).shape()
	// openTurn is the turn of events whose schema leaves it open.
	openTurn = (&obj{check: evt, what: "the turn object", fields: []field{
		req("id", nonEmpty(evt)), opt("synthesized", boolean(evt)),
	}}).shape()

	source = func(c *checker, v *tap.Value) {
		s, ok := v.Text()
		if !ok || !isAbsoluteURI(s) {
			c.report(evt, "\"source\" must be an RFC 3986 absolute URI (scheme:…, no spaces, valid %%-escapes), found %s", show(v))
		}
	}
	timestamp = func(c *checker, v *tap.Value) {
		s, ok := v.Text()
		if !ok || !isRFC3339(s) {
			c.report(evt, "%s must be an RFC 3339 date-time such as 2026-01-02T03:04:05Z (no compact form, no spaces), found %s", c.name(), show(v))
		}
	}
)

// envelopeFields are the members every event may carry (§3.1).
var envelopeFields = []field{
	req("id", nonEmpty(evt)),
	req("source", source),
	req("type", str(evt)),
	req("time", timestamp),
	opt("session", session),
	opt("parentEventId", nonEmpty(evt)),
	opt("turn", openTurn),
	opt("items", parts),
	opt("gaps", gaps),
	opt("extensions", objectAny(evt)),
	opt("synthesized", boolean(evt)),
}

// envelope checks an event whose type is unknown: the common fields, but
// not items, whose shape depends on the type.
var envelope = obj{check: evt, what: "an event", fields: without(envelopeFields, "items")}

// without returns fs less the field named name.
func without(fs []field, name string) []field {
	var out []field
	for _, f := range fs {
		if f.name != name {
			out = append(out, f)
		}
	}
	return out
}

// event builds the spec of an event type: the envelope fields with those
// the type redefines replaced, then the type's own fields.
func event(interceptable bool, also func(*checker, *tap.Value), fs ...field) *eventSpec {
	var all []field
	for _, f := range envelopeFields {
		redefined := false
		for _, g := range fs {
			redefined = redefined || g.name == f.name
		}
		if !redefined {
			all = append(all, f)
		}
	}
	return &eventSpec{obj: obj{check: evt, what: "the event", fields: append(all, fs...), also: also}, interceptable: interceptable}
}

// ---- shared sub-objects (§3.2) -------------------------------------------

var (
	closedTurn = opt("turn", identity)
	msgItems   = req("items", messages)
	optMsgs    = opt("items", messages)

	model = (&obj{check: evt, what: "a model object {id, provider}", closed: true, fields: []field{
		req("id", nonEmpty(evt)), req("provider", nonEmpty(evt)),
	}}).shape()
	attempt = (&obj{check: evt, what: "the attempt object", closed: true, fields: []field{
		req("id", nonEmpty(evt)), req("number", integer(evt, 1)), opt("synthesized", boolean(evt)),
	}}).shape()
	eventError = (&obj{check: evt, what: "the error object", closed: true, fields: []field{
		req("message", nonEmpty(evt)),
		req("class", nonEmpty(evt)),
		opt("code", nonEmpty(evt)),
		opt("status", func(c *checker, v *tap.Value) {
			if s, ok := v.Text(); ok && s != "" {
				return
			}
			if _, ok := v.Int(); ok {
				return
			}
			c.report(evt, "\"status\" must be a non-empty string or an integer, found %s", show(v))
		}),
		opt("native", anyJSON),
	}}).shape()

	batch = (&obj{check: evt, what: "the batch object", closed: true, fields: []field{
		req("id", nonEmpty(evt)),
		req("callIds", uniqueStrings(evt, 1, nonEmpty(evt))),
		opt("synthesized", boolean(evt)),
	}}).shape()

	tool = (&obj{check: evt, what: "the tool object", closed: true, fields: []field{
		req("name", nonEmpty(evt)),
		req("input", objectAny(evt)),
		req("origin", enum(evt, "native", "mcp")),
		opt("kind", nonEmpty(evt)),
		opt("mcp", mcp),
		ban("callId", "the call's identity is call.id; tool.callId belongs to the 0.1 revision").from(revision01),
	}, also: func(c *checker, v *tap.Value) {
		// §3.2: mcp is required iff origin is "mcp".
		origin, _ := v.Get("origin").Text()
		switch {
		case origin == "mcp" && !has(v, "mcp"):
			c.reportAt(evt, "mcp", "a tool with origin \"mcp\" must carry \"mcp\"")
		case origin != "mcp" && has(v, "mcp"):
			c.reportAt(evt, "mcp", "\"mcp\" is allowed only when origin is \"mcp\"")
		}
	}}).shape()

	mcp = (&obj{check: evt, what: "the mcp object", closed: true, fields: []field{
		req("server", (&obj{check: evt, what: "the mcp server object", closed: true, fields: []field{
			req("id", nonEmpty(evt)), opt("name", nonEmpty(evt)),
		}}).shape()),
		req("toolName", nonEmpty(evt)),
		req("provenance", enum(evt, "runtime", "inferred")),
		req("connection", connection),
	}}).shape()

	connGaps = list(evt, 1, (&obj{check: evt, what: "a gap", closed: true, fields: []field{
		req("path", nonEmpty(evt)), req("reason", nonEmpty(evt)),
	}}).shape())
	connURL = (&obj{check: evt, what: "an http or sse connection", closed: true, fields: []field{
		req("transport", str(evt)), opt("url", httpURL), opt("gaps", connGaps),
	}, also: locatedBy("url")})
	connStdio = (&obj{check: evt, what: "a stdio connection", closed: true, fields: []field{
		req("transport", str(evt)), opt("command", nonEmpty(evt)), opt("args", list(evt, 0, str(evt))),
		opt("cwd", nonEmpty(evt)), opt("gaps", connGaps),
	}, also: locatedBy("command", "args", "cwd")})
	connExt = (&obj{check: evt, what: "an extension-transport connection", closed: true, fields: []field{
		req("transport", str(evt)), opt("addressForm", nonEmpty(evt)), opt("address", nonEmpty(evt)), opt("gaps", connGaps),
	}, also: locatedBy("addressForm", "address")})

	execution = func(c *checker, v *tap.Value) { checkExecution(c, v) }

	usageFields = []field{
		req("kind", enum(evt, "amount", "total")),
		req("scope", enum(evt, "attempt", "turn")),
		req("completeness", enum(evt, "complete", "partial", "unknown")),
		req("provenance", enum(evt, "provider", "estimate", "mixed")),
		opt("inputTokens", integer(evt, 0)),
		opt("outputTokens", integer(evt, 0)),
		opt("cacheReadTokens", integer(evt, 0)),
		opt("cacheWriteTokens", integer(evt, 0)),
		opt("cost", (&obj{check: evt, what: "the cost object", closed: true, fields: []field{
			req("amount", number(evt, 0)), req("currency", currency), req("basis", enum(evt, "billed", "reported", "estimated")),
		}}).shape()),
	}
	// §3.2: attempt usage is amount + attempt + provider|estimate; turn
	// usage is total + turn.
	attemptUsage = (&obj{check: evt, what: "the usage object", closed: true, fields: usageFields, also: func(c *checker, v *tap.Value) {
		usageMust(c, v, "kind", "amount")
		usageMust(c, v, "scope", "attempt")
		if p := text(v, "provenance"); p == "mixed" {
			c.reportAt(evt, "provenance", "attempt usage must have provenance \"provider\" or \"estimate\", found \"mixed\"")
		}
	}}).shape()
	turnUsage = (&obj{check: evt, what: "the usage object", closed: true, fields: usageFields, also: func(c *checker, v *tap.Value) {
		usageMust(c, v, "kind", "total")
		usageMust(c, v, "scope", "turn")
	}}).shape()

	fileChange = (&obj{check: evt, what: "a file change", closed: true, fields: []field{
		req("path", nonEmpty(evt)),
		req("change", enum(evt, "created", "modified", "deleted", "moved")),
		opt("previousPath", nonEmpty(evt)),
		opt("before", part),
		opt("after", part),
	}, also: func(c *checker, v *tap.Value) {
		switch text(v, "change") {
		case "moved":
			if !has(v, "previousPath") {
				c.reportAt(evt, "previousPath", "a \"moved\" file change must carry \"previousPath\"")
			}
		case "created":
			if has(v, "before") {
				c.reportAt(evt, "before", "a \"created\" file change has no \"before\"")
			}
		case "deleted":
			if has(v, "after") {
				c.reportAt(evt, "after", "a \"deleted\" file change has no \"after\"")
			}
		}
	}}).shape()

	tokenCounts = (&obj{check: evt, what: "the tokenCounts object", closed: true, fields: []field{
		opt("before", integer(evt, 0)), opt("after", integer(evt, 0)),
	}}).shape()

	currency = func(c *checker, v *tap.Value) {
		s, ok := v.Text()
		if ok && len(s) == 3 && isUpper(s[0]) && isUpper(s[1]) && isUpper(s[2]) {
			return
		}
		c.report(evt, "%s must be a three-letter upper-case currency code such as \"USD\", found %s", c.name(), show(v))
	}

	callFields = []field{req("call", identity), req("tool", tool), req("path", nonEmpty(evt)), opt("batch", batch)}

	configChange = func(after bool) shape {
		fs := []field{
			req("source", nonEmpty(evt)), req("scope", nonEmpty(evt)),
			req("settings", list(evt, 0, nonEmpty(evt))), req("summary", nonEmpty(evt)),
			opt("path", nonEmpty(evt)),
		}
		if after {
			fs = append(fs, opt("mcpServers", list(evt, 0, objectAny(evt))))
		}
		return (&obj{check: evt, what: "the change object", closed: true, fields: fs}).shape()
	}

	task = (&obj{check: evt, what: "the task object", closed: true, fields: []field{
		req("id", nonEmpty(evt)),
		req("operation", enum(evt, "create", "update", "remove")),
		req("change", objectAny(evt)),
		opt("prior", objectAny(evt)),
		opt("synthesized", boolean(evt)),
	}}).shape()

	workspaceDelta = (&obj{check: evt, what: "a workspace change {cwd?, workspaceRoots?}", closed: true, fields: []field{
		opt("cwd", nonEmpty(evt)),
		opt("workspaceRoots", uniqueStrings(evt, 0, nonEmpty(evt))),
	}, also: func(c *checker, v *tap.Value) {
		if len(v.Obj) == 0 {
			c.report(evt, "%s must name at least one of \"cwd\" or \"workspaceRoots\"", c.name())
		}
	}}).shape()
	workspace = (&obj{check: evt, what: "the workspace object", closed: true, fields: []field{
		req("kind", enum(evt, "cwd", "roots", "switch")),
		req("change", workspaceDelta),
		opt("prior", workspaceDelta),
		opt("reason", str(evt)),
	}}).shape()
)

// locatedBy returns the rule of an MCP connection: each named location
// field is present or explained by a gaps entry whose path names it (§3.2).
func locatedBy(names ...string) func(*checker, *tap.Value) {
	return func(c *checker, v *tap.Value) {
		for _, n := range names {
			if has(v, n) {
				continue
			}
			explained := false
			for _, g := range v.Get("gaps").Elems() {
				explained = explained || text(g, "path") == n
			}
			if !explained {
				c.reportAt(evt, n, "the MCP connection must carry %q or a gaps entry whose path is %q", n, n)
			}
		}
	}
}

func connection(c *checker, v *tap.Value) {
	if !v.Is(tap.Object) {
		c.report(evt, "\"connection\" must be an object, found %s", v.Describe())
		return
	}
	switch t, _ := v.Get("transport").Text(); {
	case t == "http" || t == "sse":
		connURL.members(c, v)
	case t == "stdio":
		connStdio.members(c, v)
	case len(t) > 1 && t[0] == '_':
		connExt.members(c, v)
	default:
		c.reportAt(evt, "transport", "\"transport\" must be \"http\", \"sse\", \"stdio\" or an extension transport starting with \"_\", found %s", show(v.Get("transport")))
	}
}

func httpURL(c *checker, v *tap.Value) {
	s, ok := v.Text()
	if ok && (hasPrefixFold(s, "http://") || hasPrefixFold(s, "https://")) && isAbsoluteURI(s) {
		return
	}
	c.report(evt, "\"url\" must be an http:// or https:// URI, found %s", show(v))
}

// executionReasons are the reasons of a skipped execution (§3.2).
var executionReasons = []string{"supplied_result", "policy", "cancelled", "timeout", "other"}

func checkExecution(c *checker, v *tap.Value) {
	if !v.Is(tap.Object) {
		c.report(evt, "\"execution\" must be an object {status, reason?}, found %s", v.Describe())
		return
	}
	for _, m := range v.Obj {
		if m.Key != "status" && m.Key != "reason" && m.Key != "detail" {
			c.reportAt(evt, m.Key, "the execution object is closed: unknown member %q is not allowed", m.Key)
		}
	}
	switch st, _ := v.Get("status").Text(); st {
	case "executed":
		for _, k := range []string{"reason", "detail"} {
			if has(v, k) {
				c.reportAt(evt, k, "an executed execution carries only \"status\"; %q is not allowed", k)
			}
		}
	case "skipped":
		r := v.Get("reason")
		rs, _ := r.Text()
		switch {
		case r == nil:
			c.reportAt(evt, "reason", "a skipped execution must carry \"reason\"")
		case !inSet(rs, executionReasons...):
			c.reportAt(evt, "reason", "\"reason\" must be one of %s, found %s", quoteList(executionReasons), show(r))
		case rs == "supplied_result" && has(v, "detail"):
			c.reportAt(evt, "detail", "a supplied_result execution carries no \"detail\"")
		}
		if d := v.Get("detail"); d != nil && rs != "supplied_result" {
			c.at("detail", d, nonEmpty(evt))
		}
	default:
		c.reportAt(evt, "status", "\"status\" must be \"executed\" or \"skipped\", found %s", show(v.Get("status")))
	}
}

// executionIs reports the status and reason of an execution object.
func executionIs(v *tap.Value) (status, reason string) {
	return text(v.Get("execution"), "status"), text(v.Get("execution"), "reason")
}

func usageMust(c *checker, v *tap.Value, k, want string) {
	if got, ok := v.Get(k).Text(); ok && got != want {
		c.reportAt(evt, k, "%q must be %q here, found %q", k, want, got)
	}
}

// forbid reports each of names that v carries, with why.
func forbid(c *checker, v *tap.Value, why string, names ...string) {
	for _, n := range names {
		if has(v, n) {
			c.reportAt(evt, n, "%q must be absent: %s", n, why)
		}
	}
}

// ---- the catalogue (§3.3) -----------------------------------------------

const (
	canIntercept = true  // interceptable
	observeOnly  = false // observe-only
)

var eventSpecs = named(map[string]*eventSpec{
	"session.start": event(canIntercept, func(c *checker, v *tap.Value) {
		if t := text(v, "trigger"); (t == "clear" || t == "fork") && !has(v, "resumedFrom") {
			c.reportAt(evt, "resumedFrom", "a session.start with trigger %q must carry \"resumedFrom\"", t)
		}
	},
		req("session", session),
		req("trigger", enum(evt, "startup", "resume", "clear", "compact", "fork")),
		opt("harness", harnessClosed), // presence and emptiness: BASE-8
		req("permissionMode", nonEmpty(evt)),
		req("manifest", func(c *checker, v *tap.Value) { checkManifest(c, v, evt) }),
		msgItems,
		opt("resumedFrom", identity),
		ban("tool", "session.start describes no tool"),
		ban("outcome", "session.start has no outcome"),
	),
	"session.end": event(observeOnly, nil,
		req("session", session),
		req("outcome", enum(evt, "completed", "cancelled", "error", "unknown")),
		req("reason", nonEmpty(evt)),
		opt("counters", counters),
		ban("tool", "session.end describes no tool"),
	),
	"tool.before": event(canIntercept, nil, append(callFields,
		ban("outcome", "tool.before is a proposal, before any outcome"),
		ban("execution", "tool.before is a proposal, before any execution"),
		ban("durationMs", "tool.before is a proposal, before any execution"),
		ban("fileChanges", "tool.before is a proposal, before any execution"),
	)...),
	"tool.after": event(canIntercept, toolAfterRules, append(callFields,
		req("outcome", enum(evt, "ok", "error", "denied", "cancelled", "timeout")),
		req("execution", execution),
		msgItems,
		opt("error", eventError),
		opt("durationMs", number(evt, 0)),
		opt("fileChanges", list(evt, 0, fileChange)),
	)...),
	"config.change.before": event(canIntercept, nil, req("change", configChange(false))),
	"config.change.after":  event(observeOnly, nil, req("change", configChange(true))),
	"turn.start": event(canIntercept, nil,
		req("turn", identity),
		req("trigger", enum(evt, "user", "continuation", "hook", "external")),
		msgItems,
		opt("expandedFrom", nonEmpty(evt)),
	),
	"turn.finish.before": event(canIntercept, nil, turnFinishFields(false)...),
	"turn.end": event(observeOnly, func(c *checker, v *tap.Value) {
		if text(v, "outcome") == "completed" && has(v, "error") {
			c.reportAt(evt, "error", "a turn that completed carries no \"error\"")
		}
	}, turnFinishFields(true)...),
	"turn.progress": event(observeOnly, nil,
		req("turn", identity),
		req("item", identity),
		req("delta", oneMessage),
		req("final", boolean(evt)),
	),
	"model.request.before": event(canIntercept, func(c *checker, v *tap.Value) {
		forbid(c, v, "model.request.before comes before the model ran", "usage", "execution", "finishReason", "latencyMs", "error")
	},
		closedTurn,
		req("model", model), req("attempt", attempt), req("params", objectAny(evt)), msgItems,
	),
	"model.response.after": event(canIntercept, func(c *checker, v *tap.Value) {
		if st, reason := executionIs(v); st == "skipped" {
			if reason != "supplied_result" && inSet(reason, executionReasons...) {
				c.reportAt(evt, "execution", "a skipped model response must have reason \"supplied_result\", found %q", reason)
			}
			forbid(c, v, "a skipped (supplied) model response was not measured", "usage", "latencyMs")
		}
	},
		closedTurn,
		req("model", model), req("attempt", attempt), req("execution", execution), msgItems,
		req("finishReason", nonEmpty(evt)),
		opt("usage", attemptUsage),
		opt("latencyMs", number(evt, 0)),
		ban("error", "model errors are model.error events"),
	),
	"model.error": event(observeOnly, func(c *checker, v *tap.Value) {
		if st, _ := executionIs(v); st == "skipped" {
			c.reportAt(evt, "execution", "model.error execution must be {\"status\":\"executed\"}")
		}
	},
		closedTurn,
		req("model", model), req("attempt", attempt), req("execution", execution), req("error", eventError),
		opt("usage", attemptUsage),
		opt("latencyMs", number(evt, 0)),
		opt("recovery", nonEmpty(evt)),
		ban("finishReason", "a model error has no finish reason"),
	),
	"model.switch.before": event(canIntercept, nil,
		closedTurn,
		req("current", model), req("proposed", model), req("reason", nonEmpty(evt)),
		opt("pricing", (&obj{check: evt, what: "the pricing object", closed: true, fields: []field{
			req("currency", currency),
			opt("inputPerMillionTokens", number(evt, 0)),
			opt("outputPerMillionTokens", number(evt, 0)),
		}}).shape()),
		ban("previous", "model.switch.before names the current and proposed models"),
	),
	"model.switch.after": event(observeOnly, nil,
		closedTurn,
		req("previous", model), req("current", model), req("reason", nonEmpty(evt)),
		ban("proposed", "model.switch.after names the previous and current models"),
	),
	"tool.permission.request": event(canIntercept, func(c *checker, v *tap.Value) {
		forbid(c, v, "the permission is not resolved yet", "decision", "decidedBy", "outcome", "execution")
	}, append(callFields, closedTurn,
		req("suggestions", list(evt, 0, objectAny(evt))),
		req("sandboxBypass", boolean(evt)),
	)...),
	"tool.permission.resolved": event(observeOnly, nil, append(callFields, closedTurn,
		req("decision", enum(evt, "allow", "deny")),
		req("decidedBy", enum(evt, "user", "policy", "hook", "auto", "classifier")),
	)...),
	"tool.progress": event(observeOnly, func(c *checker, v *tap.Value) {
		forbid(c, v, "the tool is still running", "outcome", "execution")
	}, append(callFields, closedTurn,
		req("partialOutput", oneMessage),
		req("backgrounded", boolean(evt)),
	)...),
	"tool.batch.after": event(canIntercept, nil,
		closedTurn,
		req("batch", identity),
		req("calls", list(evt, 1, batchCall)),
	),
	"context.compact.before": event(canIntercept, func(c *checker, v *tap.Value) {
		forbid(c, v, "compaction has not run yet", "summary", "removed", "execution")
		if tc := v.Get("tokenCounts"); has(tc, "after") {
			c.key("tokenCounts")
			c.reportAt(evt, "after", "\"after\" must be absent: compaction has not run yet")
			c.pop()
		}
	},
		closedTurn,
		req("trigger", enum(evt, "auto", "manual", "hook")),
		msgItems,
		opt("instructions", textParts),
		opt("tokenCounts", tokenCounts),
	),
	"context.compact.after": event(canIntercept, func(c *checker, v *tap.Value) {
		if st, reason := executionIs(v); st == "skipped" && reason != "supplied_result" && inSet(reason, executionReasons...) {
			c.reportAt(evt, "execution", "a skipped compaction must have reason \"supplied_result\", found %q", reason)
		}
	},
		closedTurn,
		req("summary", textParts),
		req("removed", list(evt, 0, (&obj{check: evt, what: "a removed item {id}", closed: true, fields: []field{req("id", nonEmpty(evt))}}).shape())),
		req("execution", execution),
		optMsgs,
		opt("tokenCounts", tokenCounts),
	),
	"task.change.before":      event(canIntercept, nil, req("task", task)),
	"task.change.after":       event(observeOnly, nil, req("task", task)),
	"workspace.change.before": event(canIntercept, nil, req("workspace", workspace)),
	"workspace.change.after":  event(observeOnly, nil, req("workspace", workspace)),
	"file.changed": event(observeOnly, nil, req("changes", list(evt, 1, (&obj{check: evt, what: "a file change", closed: true, fields: []field{
		req("path", nonEmpty(evt)),
		req("operation", enum(evt, "create", "update", "remove")),
		req("agentCaused", boolean(evt)),
		opt("before", part),
		opt("after", part),
	}}).shape()))),
	"user.attention": event(observeOnly, nil, req("attention", (&obj{check: evt, what: "the attention object", closed: true, fields: []field{
		req("kind", nonEmpty(evt)), req("message", textParts), req("title", textParts),
	}}).shape())),
	"user.elicitation.request": event(canIntercept, nil, req("elicitation", (&obj{check: evt, what: "the elicitation object", closed: true, fields: []field{
		req("server", nonEmpty(evt)), req("mode", enum(evt, "form", "url")), opt("request", textPart),
	}}).shape())),
	"user.elicitation.result": event(canIntercept, nil, req("elicitation", (&obj{check: evt, what: "the elicitation object", closed: true, fields: []field{
		req("server", nonEmpty(evt)), req("mode", enum(evt, "form", "url")),
		req("action", enum(evt, "accept", "decline", "cancel")), opt("result", textPart),
	}}).shape())),
	"user.message.inbound": event(canIntercept, nil, req("message", (&obj{check: evt, what: "the message object", closed: true, fields: []field{
		req("channel", nonEmpty(evt)), req("sender", nonEmpty(evt)), req("messages", userMessages),
	}}).shape())),
	"user.message.outbound": event(canIntercept, nil, req("message", (&obj{check: evt, what: "the message object", closed: true, fields: []field{
		req("channel", nonEmpty(evt)), req("messages", asstMessages),
	}}).shape())),
	"hook.failure": event(observeOnly, nil,
		req("failure", (&obj{check: evt, what: "the failure object", closed: true, fields: []field{
			req("backendId", nonEmpty(evt)), req("reason", nonEmpty(evt)), req("policy", enum(evt, "fail-open", "fail-closed")),
		}}).shape()),
		req("parentEventId", nonEmpty(evt)),
	),
})

// named sets each spec's description from its event type, for messages
// such as `a tool.before event must carry "call"`.
func named(specs map[string]*eventSpec) map[string]*eventSpec {
	for typ, s := range specs {
		s.what = "a " + typ + " event"
	}
	return specs
}

func turnFinishFields(end bool) []field {
	fs := []field{
		req("turn", identity),
		req("outcome", enum(evt, "completed", "failed", "cancelled", "max_iterations")),
		req("continuationCount", integer(evt, 0)),
		msgItems,
		opt("lastAssistantItem", identity),
		opt("usage", turnUsage),
	}
	if end {
		fs = append(fs, opt("error", eventError))
	}
	return fs
}

// harnessClosed reports members beyond name and version in an object
// harness on session.start (§3.4: upstream closes it). A missing, empty or
// non-object harness is BASE-8's.
func harnessClosed(c *checker, v *tap.Value) {
	if !v.Is(tap.Object) {
		return
	}
	for _, m := range v.Obj {
		if m.Key != "name" && m.Key != "version" {
			c.reportAt(evt, m.Key, "the session.start harness object is closed {name, version}: unknown member %q is not allowed", m.Key)
		}
	}
}

func counters(c *checker, v *tap.Value) {
	if !v.Is(tap.Object) {
		c.report(evt, "\"counters\" must be an object of non-negative integers, found %s", v.Describe())
		return
	}
	for _, m := range v.Obj {
		c.at(m.Key, m.Val, integer(evt, 0))
	}
}

// toolAfterRules are tool.after's conditional rules (§3.3).
func toolAfterRules(c *checker, v *tap.Value) {
	outcome := text(v, "outcome")
	switch {
	case outcome == "error" && !has(v, "error"):
		c.reportAt(evt, "error", "a tool.after with outcome \"error\" must carry \"error\" {message, class}")
	case outcome != "error" && has(v, "error"):
		c.reportAt(evt, "error", "\"error\" is allowed only when outcome is \"error\"")
	}
	st, reason := executionIs(v)
	if outcome == "denied" && v.Get("execution").Is(tap.Object) && (st != "skipped" || reason != "policy") {
		c.reportAt(evt, "execution", "a denied tool call must have execution {\"status\":\"skipped\",\"reason\":\"policy\"}")
	}
	if st == "skipped" {
		forbid(c, v, "a skipped tool call did not run", "durationMs", "fileChanges")
	}
}

// batchCall is one member of tool.batch.after calls (closed).
var batchCall = (&obj{check: evt, what: "a batch call", closed: true, fields: []field{
	req("call", identity), req("tool", tool), req("path", nonEmpty(evt)), opt("batch", batch),
	req("outcome", enum(evt, "ok", "error", "denied", "cancelled", "timeout")),
	req("execution", execution),
}, also: func(c *checker, v *tap.Value) {
	st, reason := executionIs(v)
	if text(v, "outcome") == "denied" && v.Get("execution").Is(tap.Object) && (st != "skipped" || reason != "policy") {
		c.reportAt(evt, "execution", "a denied call must have execution {\"status\":\"skipped\",\"reason\":\"policy\"}")
	}
}}).shape()

func isUpper(b byte) bool { return b >= 'A' && b <= 'Z' }

func hasPrefixFold(s, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		a, b := s[i], p[i]
		if a >= 'A' && a <= 'Z' {
			a += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// ---- the rest of hooks/intercept params ------------------------------------

// interceptState is params.state of hooks/intercept: the chain's state the
// harness carries from one backend to the next (protocol-notes §4.5,
// intercept-request.schema). The object is open, like the schema; its
// members are checked as the schema defines them.
var interceptState = (&obj{check: evt, what: "the intercept state object", fields: []field{
	req("permission", enum(evt, "none", "allow", "ask", "deny")),
	req("candidate", func(c *checker, v *tap.Value) {
		if v.IsNull() {
			return // no candidate yet
		}
		stateCandidate(c, v)
	}),
	opt("flow", enum(evt, "none", "stop", "continue")),
	opt("instructions", list(evt, 0, nonEmpty(evt))),
	opt("injections", list(evt, 0, nil)),
}}).shape()

// stateCandidate is state.candidate when not null: {value, provenance?}.
var stateCandidate = (&obj{check: evt, what: "the state candidate (null or {value, provenance?})", fields: []field{
	req("value", anyJSON),
	opt("provenance", objectAny(evt)),
}}).shape()

// interceptParamsProblems checks the members of hooks/intercept params
// (at ptr) beside the event and the capabilities: state (EVT-1) and
// extensions, which must be an object (EVT-1; BASE-4 judges its keys).
func interceptParamsProblems(params *tap.Value, ptr string) []problem {
	c := newChecker(ptr)
	if st := params.Get("state"); st != nil {
		c.at("state", st, interceptState)
	}
	if ext := params.Get("extensions"); ext != nil {
		c.at("extensions", ext, objectAny(evt))
	}
	return c.done()
}
