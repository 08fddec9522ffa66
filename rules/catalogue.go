package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A Check is one entry of the check catalogue (docs/checks.md, generated
// from this table by TestChecksDoc). Check IDs are a public interface: they
// never change meaning.
type Check struct {
	ID          string
	Requirement string
	// Level is the usual level of the check's findings; a rule may report
	// a suspicious but legal fact under it as a warning.
	Level   tap.Level
	Summary string
	// Description says what is checked on the wire, for people: the
	// catalogue text of docs/checks.md.
	Description string
	// Scope is whose behaviour the check judges, what configuration it
	// needs and what traffic exercises it (Coverage).
	Scope Scope
}

// Catalogue lists every check a finding can carry, in catalogue order.
// TAP-* checks are ahp-tap's own facts about the audit, not the traffic.
// § numbers are sections of the AHP draft.
var Catalogue = []Check{
	{"BASE-1", "AHP-RPC-001", tap.Error, "every message is UTF-8 and one JSON-RPC 2.0 object of exactly one kind (no batches, no duplicate keys)",
		"Every message in either direction is UTF-8, parses as one JSON object (an array is a forbidden batch; duplicate object keys are invalid), has `\"jsonrpc\":\"2.0\"`, and is exactly one of: request (`id` string or integer, `method`, `params` object), notification (no `id`), success response (`id`, `result` object, no `error`), error response (`id`, `error{code integer, message string, data?}`, no `result`). §2 " +
			"A message is classified by its members: with `result` or `error` and no `params` it is a response, even when it also carries `method` (an unknown member of a response is no finding, as upstream); with `method` and `params` it is a request or notification, and a `result` or `error` beside them is reported. An integer is an integer whatever its size (`2^64`, `1e308`, `1.0`). " +
			"Not BASE-1: what `params` and `result` hold (the method's own checks), and on stdio a line that is not JSON at all (STDIO-1).",
		Scope{JudgesSender, "", 0, ByFrame}},
	{"STDIO-1", "AHP-STDIO-001", tap.Error, "stdio framing: one object per line ended by one \\n; nothing else on backend stdout",
		"One object per line, ended by exactly one `\\n`; no literal newline inside a message (pretty-printed JSON); nothing on backend stdout that is not a protocol message (banners, logs, progress); a final line without `\\n` at EOF; `\\r\\n` endings (warn). Stderr is free-form and never a finding. §1.2 " +
			"The rule for `\\r`: AHP-STDIO-001 delimits frames by `\\n` alone and forbids a literal newline inside one; it says nothing of the carriage return. So a `\\r\\n` ending is a warning (a strict reader sees a stray `\\r`), never an error, and a `\\r` where JSON allows white space is legal JSON and no finding; a raw `\\r` inside a string makes the line no JSON at all, reported as any line that is not one object. The upstream checker rejects every `\\r` in a stdio frame; ahp-tap does not, because the binding does not say so. " +
			"Not STDIO-1: a line that is JSON but not one JSON-RPC object (BASE-1), and what a message holds.",
		Scope{JudgesSender, tap.Stdio, 0, ByFrame}},
	{"STDIO-2", "AHP-STDIO-001", tap.Error, "per_event lifecycle: one message then EOF, at most one line back, exit 0 after an intercept",
		"`per_event` lifecycle: the backend process receives exactly one message then EOF, writes at most one line, writes none for a notification, and exits 0 after an intercept exchange; a nonzero exit, a crash or a missing response is reported. §1.2 " +
			"Checked only when the lifecycle is known (`--registration`/`--hook`, or `--lifecycle`); not what the backend did with the message.",
		Scope{JudgesBackend, tap.Stdio, NeedPerEvent, ByFrame}},
	{"STDIO-3", "AHP-STDIO-001", tap.Error, "persistent lifecycle: at most one hooks/intercept outstanding",
		"`persistent` lifecycle: at most one `hooks/intercept` outstanding at a time on one backend. §1.2 " +
			"Checked only for the `persistent` lifecycle; `hooks/observe` notifications are not counted (the binding bounds intercepts only).",
		Scope{JudgesHarness, tap.Stdio, NeedPersistent, ByIntercept}},
	{"HTTP-1", "AHP-HTTP-001", tap.Error, "each message is one POST with one JSON-RPC object and Content-Type: application/json",
		"Each message is one `POST` whose body is one JSON-RPC object; `Content-Type: application/json` on requests and on responses that carry a body. §1.3 " +
			"Not HTTP-1: what the JSON-RPC body holds (BASE-1 and the message's checks), or header bytes (Go's net/http does not keep them exactly).",
		Scope{JudgesSender, tap.HTTP, 0, ByFrame}},
	{"HTTP-2", "AHP-HTTP-001", tap.Error, "status codes: 200 for intercept and capabilities, 202/204 with no body for observe",
		"`hooks/intercept` and `hooks/capabilities` are answered `200` with the JSON-RPC response; `hooks/observe` is answered `202` or `204` with an empty body; `401` only as an authentication challenge; any other status, and any redirect, is an operational failure. §1.3 " +
			"Not HTTP-2: how the harness treated the status (not observable on the wire).",
		Scope{JudgesSender, tap.HTTP, 0, ByFrame}},
	{"HTTP-3", "AHP-HTTP-001", tap.Error, "TLS is required off loopback",
		"A non-loopback endpoint reached over plain `http://` (TLS is required off loopback). §1.3 " +
			"Not HTTP-3: the certificate or TLS version of an `https://` endpoint.",
		Scope{JudgesHarness, tap.HTTP, 0, ByFrame}},
	{"AUTH-1", "AHP-AUTH-001", tap.Error, "one Authorization header; the bearer credential never appears in a body",
		"At most one `Authorization` header; the bearer credential seen in it never appears in any body, `error.data`, deny `reason`, or log line ahp-tap writes. §1.4 " +
			"Not AUTH-1: whether the credential is valid or authorised (not observable); a credential that never appeared in an `Authorization` header the tap saw is not recognised elsewhere.",
		Scope{JudgesSender, tap.HTTP, 0, ByFrame}},
	{"BASE-2", "AHP-VER-001", tap.Error, "protocolVersion equals the snapshot in every params and successful result",
		"`protocolVersion` equals the selected snapshot (default `\"draft\"`) in `params` of every request and notification and in every successful `result`; absent from error responses is fine. §2.3 " +
			"Not BASE-2: the registration's own `protocolVersion` (BASE-5).",
		Scope{JudgesSender, "", 0, ByFrame}},
	{"BASE-3", "AHP-CORE-003", tap.Error, "unknown fields are ignored; unknown event types, effect types and enum values are unsupported semantics",
		"Unknown object fields never produce a finding on their own. Unknown event types, effect types, operations and enum values are unsupported semantics: reported (warn on a request the backend then refuses correctly, error on a response that carries them). §6.3 " +
			"Not BASE-3: the shape of a known event or effect (EVT-1, EFF-1).",
		Scope{JudgesSender, "", 0, ByFrame}},
	{"BASE-4", "AHP-EXT-001", tap.Error, "extension keys, deny codes and extension effect names are reverse-DNS",
		"Every key of every `extensions` object, every `deny.code`, and every extension effect name is reverse-DNS. §6.4 " +
			"Not BASE-4: whether an extension is understood, or the values inside `extensions` (unrestricted JSON); an `extensions` that is not an object is EVT-1 or EFF-1.",
		Scope{JudgesSender, "", 0, ByFrame}},
	{"BASE-5", "AHP-REG-001, AHP-REG-002", tap.Error, "the registration is valid and every event reaching the backend matches a subscription's events and mode",
		"With a registration given: the registration is valid before use (§5), and every event reaching this backend is covered by one of its subscriptions whose `events` names the event type and whose `mode` matches the method (`hooks/intercept` ↔ `intercept`, `hooks/observe` ↔ `observe`). An observe of an event covered only by an intercept subscription is the allowed short-circuit case (info). " +
			"A registration with duplicate member names is invalid (duplicate keys are invalid JSON for AHP everywhere, and parsers disagree on which one wins): `check` reports each one, and `--registration` refuses the file (exit 2). Integers (`timeoutMs`, `maxBytes`) are compared by value, whatever their size. " +
			"Not BASE-5: whether the harness applied the registration's failure policy or content selection (not observable on the wire).",
		Scope{JudgesHarness, "", NeedHook, ByEvent}},
	{"BASE-6", "AHP-CORE-004", tap.Error, "event identity is preserved across retries",
		"A harness preserves event identity across retries: a re-sent event (same `event.id`, same `source`) carries identical event content, the same JSON-RPC `id`, session id and call id; no retry follows an explicit deny or a successful empty-effect response; a retry stays within the original deadline. Two different events never share one `(source, id)`. Holds across process-per-event backends too. §7 " +
			"Across `per_event` processes only when they share `--state DIR`; not whether the harness ignored a late or duplicate answer.",
		Scope{JudgesHarness, "", NeedSharedPerEvent, ByEvent}},
	{"BASE-7", "AHP-RPC-002", tap.Error, "unsupported requests get the defined JSON-RPC error; notifications get no response",
		"A backend answers unsupported request semantics with the defined JSON-RPC error (`-32001` unsupported protocol version, `-32002` unsupported event, `-32601` unknown method) rather than a success; it sends no response at all (neither result nor error) to a notification. §2.5 " +
			"An answer to a notification is reported only where it is recognisable (it matches no request, on a per_event backend that received a notification, with a null id after a notification, or echoing its event id), to keep false positives at zero.",
		Scope{JudgesBackend, "", 0, ByBackendAnswer}},
	{"BASE-8", "", tap.Error, "every event carries harness with non-empty name and version (Base Protocol profile)",
		"Every event, observed or intercepted, carries `harness` with non-empty string `name` and `version`, also when no `session.start` came before (Base Protocol profile). " +
			"Not BASE-8: the other members of `harness` (EVT-1 on `session.start`, where the object is closed).",
		Scope{JudgesHarness, "", 0, ByEvent}},
	{"BASE-9", "AHP-SEC-001, AHP-CAP-001, AHP-DEC-001", tap.Error, "no successful result weakens host controls: only advertised, allowed effects",
		"No successful result weakens host controls: every returned effect type, modify target and operation, flow operation and inject `deliverAt` was advertised in that request's `capabilities`, and is allowed at that event (§4.3); no effect type that is not defined (an unknown \"grant\"-like effect) is accepted as valid. " +
			"Not BASE-9: modify targets and operations (EDIT-6), the shape of an effect (EFF-1), and the request's own capabilities (CAP-1).",
		Scope{JudgesBackend, "", 0, ByEffects}},
	{"CORR-1", "AHP-CORE-004", tap.Error, "the JSON-RPC id of hooks/intercept equals params.event.id",
		"The JSON-RPC `id` of `hooks/intercept` equals `params.event.id`. §2.4 " +
			"Not CORR-1: `hooks/observe` (a notification has no id) and `hooks/capabilities` (no event).",
		Scope{JudgesHarness, "", 0, ByIntercept}},
	{"CORR-2", "AHP-RPC-001", tap.Error, "every request is answered exactly once with its id",
		"Every request is answered exactly once with the same `id`; no response for an id that was never sent or was already answered; requests still unanswered when a stream, process or connection ends are reported. Ids are paired exactly as written, never coerced (`1`, `1.0` and `\"1\"` are three ids). A request id that other implementations do not preserve (an integer beyond ±(2^53−1), or an integer written as `1.0` or `1e3`) is a warning: legal JSON-RPC, but a JavaScript or double-decoding peer answers with another id.",
		Scope{JudgesBackend, "", 0, ByFrame}},
	{"CORR-3", "AHP-FAIL-002", tap.Error, "responses arrive within the subscription's timeoutMs",
		"A response that arrives after the subscription's `timeoutMs` (from the registration, or a deadline given on the command line) is late: reported, and the harness must ignore it. " +
			"Not checked without a deadline (no `timeoutMs` for the hook and no `--timeout`: the summary says so); not whether the harness ignored the late response.",
		Scope{JudgesBackend, "", NeedDeadline, ByAnswer}},
	{"CAP-1", "AHP-CAP-002", tap.Error, "every hooks/intercept carries well-formed capabilities",
		"Every `hooks/intercept` carries `capabilities.effects` (with `deny` for `tool.before`); option blocks match the listed effects (`modify` ⇔ `modify{}`, `flow` ⇔ `flow{}`, `inject` ⇔ `inject{}`); `continue` comes with `remainingContinuations` and `continuationCount`. §4.2 " +
			"Not CAP-1: what the backend returned against the capabilities (BASE-9, EDIT-6).",
		Scope{JudgesHarness, "", 0, ByIntercept}},
	{"CAP-2", "AHP-RPC-001", tap.Error, "hooks/capabilities request and result shapes; the manifest follows §6.1",
		"`hooks/capabilities`: request params hold only `protocolVersion`; the result holds `manifest` and no `effects`; an intercept result holds no `manifest`; the manifest follows §6.1 (its members' types, enums and uniqueness; `limits` are integers ≥ 0 of any size). " +
			"Not CAP-2: whether the backend honours what its manifest declares.",
		Scope{JudgesSender, "", 0, ByCapabilities}},
	{"EVT-1", "AHP-TB-001, AHP-RPC-002", tap.Error, "event envelope and per-type payload; only interceptable events in hooks/intercept",
		"Event envelope (`id`, `source` absolute URI, `type`, `time` RFC 3339) and per-type payload: required and forbidden fields, enums, closed nested objects (§3.2–3.3); `hooks/intercept` carries only the 19 interceptable events. " +
			"Also the rest of `hooks/intercept` params: `state` (the chain's state: an object with `permission` none/allow/ask/deny and `candidate` null or `{value, provenance?}` with an object `provenance`, optional `flow` none/stop/continue, `instructions` non-empty strings, `injections` an array) and `extensions`, which must be an object. " +
			"`source` is an absolute URI by RFC 3986's grammar (scheme, authority with a valid IPv6 or IPvFuture literal, IPv4 address or reg-name and a numeric port, path, query, one fragment; every `%` a valid escape), not by a character set; RFC 6874 zone identifiers are refused. `time` is RFC 3339 `date-time`; the leap second `23:59:60` is accepted only at 23:59 UTC on the last day of a month (RFC 3339 §5.7: only where a leap second can occur; leap seconds are inserted at a month end, June and December first, so ahp-tap accepts any month end, as the upstream checker does). " +
			"Not EVT-1: an unknown event type (BASE-3; its payload is not checked), a missing or empty `harness` (BASE-8), `protocolVersion` (BASE-2), the names of extension keys (BASE-4), content inside events (EDIT-1, EDIT-2), and whether the event's facts are true.",
		Scope{JudgesHarness, "", 0, ByEvent}},
	{"EFF-1", "AHP-DEC-001, AHP-CORE-003", tap.Error, "every effect is a closed object of a defined type; one invalid effect invalidates the response",
		"Every effect is a closed object of a defined type with its required fields; one invalid member invalidates the whole response (the response is reported once, naming every effect it takes down). An intercept result carries `effects` (an array) and, when present, an object `extensions`. §4.1, §4.6 " +
			"Not EFF-1: whether an effect was advertised or is allowed at the event (BASE-9), edit values and their semantics (EDIT-3…EDIT-8), content inside `inject` values (EDIT-1, EDIT-2).",
		Scope{JudgesBackend, "", 0, ByEffects}},
	{"EDIT-1", "AHP-CONTENT-001", tap.Error, "model, turn and context items are canonical message lists",
		"Model, turn and context items are canonical message lists: each message has its own `id`, `role`, `parts`, optional `synthesized`; user-message events use `message.messages`; parts do not repeat role or parent identity. Wherever the content appears: in an event, an `inject` value, or inside a `modify` value. §8 " +
			"Not EDIT-1: the parts inside messages (EDIT-2).",
		Scope{JudgesSender, "", 0, ByContent}},
	{"EDIT-2", "AHP-CONTENT-001", tap.Error, "text part variants: body text inline; metadata, omit and gap views carry no text or body",
		"A selected text part has `kind:\"text\"`, `mediaType:\"text/plain\"`, `selection:\"body\"` and inline `text`, with no body reference or upload; metadata, omit and gap views carry neither `text` nor `body`; parts are closed text or attachment variants (there is no JSON part kind), and a content reference is `{ref}` only. Wherever the content appears, inside a `modify` value too. §8 " +
			"An attachment's `mediaType` is a media type by RFC 9110 §8.3.1's grammar (`type/subtype` tokens, optional `; name=value` parameters, nothing around it: `image/png\\n` is not one) and is not textual (`text/*`, JSON or `+json`, which are text parts). " +
			"Not EDIT-2: whether a media type is registered with IANA, or the body behind a `{ref}` (never on this wire).",
		Scope{JudgesSender, "", 0, ByContent}},
	{"EDIT-3", "AHP-CONTENT-002, AHP-EDIT-001", tap.Error, "attachments are immutable; no whole-list replace over hidden text parts",
		"Attachment bodies stay immutable `{ref}` references: an edit may keep unchanged attachment descriptors that the event carried, remove or reorder them, but not change their content or substitute a reference the event did not carry; a whole-list `replace` is rejected when the existing list holds any metadata, omit or gap text part; a list `merge` keeps those entries. " +
			"Not EDIT-3: the body behind a `{ref}` (never on this wire).",
		Scope{JudgesBackend, "", 0, ByModify}},
	{"EDIT-4", "AHP-EDIT-001", tap.Error, "modify values fit the target and the boundary",
		"`modify` values fit target and boundary: `prompt`, `request`, `response`, `output` and outbound `content` are message lists; `instructions` and `summary` are text-part lists; elicitation-result `content` is the parsed MCP answer object of an accepted form result; `input` and `workspace` are objects; `output` only at `tool.after` (its `items`); no `modify(request)` at `user.elicitation.request`. A value of the wrong kind (an object where a message list belongs, bare parts for `output`) is EDIT-4; a fault inside content of the right kind keeps its content check (EDIT-1, EDIT-2). §4.4",
		Scope{JudgesBackend, "", 0, ByModify}},
	{"EDIT-5", "AHP-EDIT-001", tap.Error, "replace, list merge and object merge semantics",
		"Operation semantics: `replace` substitutes the whole target; list `merge` appends in order without de-duplication; object `merge` is shallow and keeps literal `null`; a `merge` whose value and target are not the same kind (list/object) is invalid. Where ahp-tap can compute the effective value it reports it in the exchange record.",
		Scope{JudgesBackend, "", 0, ByModify}},
	{"EDIT-6", "AHP-CAP-001", tap.Error, "an edit needs the exact advertised capability and body selection",
		"An edit needs the exact `capabilities.modify[target].replace` or `.merge` advertised, and (with a registration) body selection for the content it edits; inline text never bypasses selection. " +
			"Not EDIT-6: effect types that were not advertised (BASE-9).",
		Scope{JudgesBackend, "", 0, ByModify}},
	{"EDIT-7", "AHP-EDIT-001", tap.Error, "one invalid effect rejects every edit in the response",
		"The whole response is validated before any change is published: one invalid later effect rejects every edit in that response (reported as one finding on the response, besides the finding of the invalid effect itself).",
		Scope{JudgesBackend, "", 0, ByModify}},
	{"EDIT-8", "AHP-CONTENT-001", tap.Error, "elicitation request/result text parts are complete MCP JSON that agrees with the envelope",
		"A body-selected elicitation `request`/`result` text part parses as complete MCP JSON and fits the pinned MCP contract; request `mode` (MCP's omitted mode means `form`) and result `action` agree with the envelope; result `content` only for an accepted form result; metadata, omit and gap views are never parsed. " +
			"Not EDIT-8: elicitation text parts that are not body-selected.",
		Scope{JudgesHarness, "", 0, ByElicitation}},
	{"COND-1", "AHP-COMP-001", tap.Error, "conduct: an event reaches the matching interceptors one at a time, in registration order",
		"Across every tapped backend of one registration: the same event reaches the matching intercept subscriptions one at a time, in the order of the registration's `hooks` array, never two `hooks/intercept` outstanding at once across backends (an intercept whose deadline has expired is no longer outstanding). Times from different taps are compared with a tolerance of 5 ms (docs/conduct.md). It cannot see a backend that is not tapped (the event is then not judged), nor a harness that holds an event back internally. §4.5",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-2", "AHP-COMP-001, AHP-FAIL-001", tap.Error, "conduct: no later interceptor gets an event after an accepted deny or flow stop, or a fail-closed failure",
		"After an accepted `deny` or flow `stop`, or an operational failure (error response, invalid response, missed deadline) of a `fail-closed` subscription, no later interceptor receives the event as `hooks/intercept`. A best-effort `hooks/observe` of the settled event to a remaining uncalled intercept subscription is allowed (BASE-5 notes it as info). It cannot see an interruption, which ends a chain too (never a finding). §4.5, §7",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-3", "AHP-FAIL-001", tap.Warn, "conduct: after a fail-open failure the chain goes on to the next matching interceptor",
		"After an operational failure of a `fail-open` subscription, the chain goes on to the next matching intercept subscription (one without `filters`, whose backend is tapped). A warning, not an error: an interruption, which the wire does not show, also ends a chain. §4.5, §7",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-4", "AHP-COMP-001", tap.Error, "conduct: observers get an intercepted event after the chain settled",
		"A `hooks/observe` of an event that is also intercepted reaches observe subscriptions after the intercept chain settled: no interceptor is still outstanding, and none receives the event later. It cannot see whether a harness waited on an observer inside the host. §4.5",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-5", "AHP-COMP-001, AHP-EDIT-001", tap.Error, "conduct: a later interceptor gets the chained state and the accepted effective content",
		"Each later interceptor's request carries what earlier answers decided: `params.state.permission` is sticky (deny over ask over allow over none), `state.instructions` and `state.injections` keep what earlier requests carried and add what an accepted answer contributed (a flow `continue` instruction, an `inject`); a failed or rejected answer contributes nothing; and an accepted `modify` of the tool `input` is the input the next interceptor sees. Judged only between two requests that both carry `state`. §2.6, §4.5",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-6", "AHP-REG-002, AHP-COMP-001", tap.Error, "conduct: an intercept subscription already called for an event gets no second copy as hooks/observe",
		"After a short circuit only uncalled matching intercept subscriptions get a best-effort `hooks/observe`: a backend that received the event as `hooks/intercept` gets no `hooks/observe` of it unless it has an observe subscription of its own for the event (tracking is per subscription, not per backend). §4.5",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-7", "AHP-CAP-001", tap.Error, "conduct: remainingContinuations drops by one after a continue, and not after a stop",
		"Across successive `turn.finish.before` events of one turn, `capabilities.flow.remainingContinuations` drops by exactly one after a chain that resolved to `continue`, and is unchanged after one that resolved to `stop`. Judged from the first intercept of each event. §4.2, §4.5",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-8", "AHP-DEC-002", tap.Error, "conduct: a denied operation shows no sign of having run (best effort)",
		"After a `*.before` event was denied (an accepted `deny`, or a `fail-closed` failure), a later `tool.after` for its `call.id`, or a `*.after` event whose `parentEventId` names it, with an outcome other than `denied`, is evidence the operation ran. Best effort: ahp-tap sees only the events some tapped subscription receives; the absence of such an event proves nothing. §3.3, §4.5",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-9", "AHP-CORE-004", tap.Error, "conduct: event lineage: call ids and parentEventId link to known events",
		"`tool.after.call.id` matches an earlier `tool.before` (when a tapped subscription without `filters` receives `tool.before`; a warning, since the harness may dispatch it elsewhere); one `tool.before` per call (a second one under another event id is a retry that lost its identity) and one `tool.after`; `parentEventId` never names a call id instead of an event, names an event of the same `source`, and forms no cycle; a `user.elicitation.result`'s parent is a `user.elicitation.request` (these hold for `hook.failure.parentEventId` too). Parents no tapped subscription received are not judged. §3.1, §3.3",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-10", "AHP-FAIL-002", tap.Error, "conduct: the harness gives up on an unanswered intercept at its deadline, and retries it only within that deadline",
		"After a `hooks/intercept` whose answer did not reach the harness by the subscription's deadline (the backend never answered, answered late, or ahp-tap dropped the answer with `--inject drop`), the harness gives up at the deadline and applies the failure policy at once: the chain's next step (the event to the next interceptor, or to an observer) comes within 1 s of the deadline; and a retry of the intercept to the same backend is sent within the original deadline, measured from the first delivery (BASE-6 says the same of each link on its own). It cannot see a harness that waits forever and then sends nothing more for the event, nor a harness that was interrupted (a warning for a late next step, an error for a late retry). Not COND-10: a retry under a new event id (COND-9). §7",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"COND-11", "AHP-FAIL-001", tap.Warn, "conduct: a hook.failure observation names an interceptor that failed for its parent event, under that subscription's failure policy",
		"A `hook.failure` event sent to a tapped observer names, in `parentEventId`, an event the timeline holds, and in `failure.backendId` a backend (the registration's hook id) whose `hooks/intercept` of that event failed operationally (an error or invalid response, a missed deadline, or a fault ahp-tap injected in the answer's place), and `failure.policy` is that subscription's `failurePolicy`: a warning when it names another backend, one that did not fail, or another policy. AHP lets a harness surface a failure as `hook.failure` without requiring it: when a tapped hook observes `hook.failure` and an intercept failed with none naming it, that is reported as information only. Events the timeline no longer holds are not judged. §3.3, §7",
		Scope{JudgesHarness, "", 0, ByConduct}},
	{"TAP-1", "", tap.Warn, "ahp-tap could not audit every frame (queue full or audit copy truncated); traffic was unaffected",
		"ahp-tap's own fact, about the audit and never about the traffic: some frames were forwarded but not audited (audit queue full, audit copy truncated, capture cut off, a frame past the audit work bound of 1,048,576 JSON values), a frame had more than 1000 findings (the rest are counted), or ahp-tap forgot old credentials past its cap of 100,000; forwarding was not affected. A warning, so a run that audited less than it saw says so.",
		Scope{JudgesSender, "", 0, ByAnything}},
	{"TAP-2", "", tap.Error, "an ahp-tap rule failed internally; traffic was unaffected",
		"ahp-tap's own fact, about the audit and never about the traffic: an ahp-tap rule failed internally; the frame was forwarded unchanged. An error, because a check that did not run is a check that did not pass.",
		Scope{JudgesSender, "", 0, ByAnything}},
}

// CheckByID returns the catalogue entry for id.
func CheckByID(id string) (Check, bool) {
	for _, c := range Catalogue {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

// info builds the RuleInfo of a rule reporting under check, taking the
// requirement and level from the catalogue. It panics on an unknown check:
// a rule may only report under a catalogue ID.
func info(ruleID string, check vocab.CheckID, summary string) tap.RuleInfo {
	c, ok := CheckByID(string(check))
	if !ok {
		panic("rules: rule " + ruleID + " reports under unknown check " + string(check))
	}
	return tap.RuleInfo{ID: ruleID, Check: check, Requirement: c.Requirement, Level: c.Level, Summary: summary}
}

// warnInfo is info for a rule that reports a legal but suspicious fact
// under check, at level warn whatever the check's usual level.
func warnInfo(ruleID string, check vocab.CheckID, summary string) tap.RuleInfo {
	ri := info(ruleID, check, summary)
	ri.Level = tap.Warn
	return ri
}

// ChecksDocURL is the published catalogue document, docs/checks.md; every
// check has a stable anchor in it (CheckAnchor), so a report can link a
// finding to its check (SARIF helpUri).
const ChecksDocURL = "https://github.com/ahp-tap/ahp-tap/blob/main/docs/checks.md"

// CheckAnchor is the anchor of check id in docs/checks.md ("EDIT-4" →
// "edit-4"): the check's heading holds the ID alone, so the anchor is the
// one every Markdown renderer derives from it, and never changes.
func CheckAnchor(id string) string { return strings.ToLower(id) }

// CheckHelpURI is the address of check id's entry in the published
// catalogue document.
func CheckHelpURI(id string) string { return ChecksDocURL + "#" + CheckAnchor(id) }
