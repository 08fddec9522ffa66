package rules

import "github.com/ahp-tap/ahp-tap/tap"

// A Check is one entry of the check catalogue (docs/CHECKS.md). Check IDs
// are a public interface: they never change meaning.
type Check struct {
	ID          string
	Requirement string
	Level       tap.Level
	Summary     string
}

// Catalogue lists every check a finding can carry, in catalogue order.
// TAP-* checks are ahp-tap's own facts about the audit, not the traffic.
var Catalogue = []Check{
	{"BASE-1", "AHP-RPC-001", tap.Error, "every message is UTF-8 and one JSON-RPC 2.0 object of exactly one kind (no batches, no duplicate keys)"},
	{"STDIO-1", "AHP-STDIO-001", tap.Error, "stdio framing: one object per line ended by one \\n; nothing else on backend stdout"},
	{"STDIO-2", "AHP-STDIO-001", tap.Error, "per_event lifecycle: one message then EOF, at most one line back, exit 0 after an intercept"},
	{"STDIO-3", "AHP-STDIO-001", tap.Error, "persistent lifecycle: at most one hooks/intercept outstanding"},
	{"HTTP-1", "AHP-HTTP-001", tap.Error, "each message is one POST with one JSON-RPC object and Content-Type: application/json"},
	{"HTTP-2", "AHP-HTTP-001", tap.Error, "status codes: 200 for intercept and capabilities, 202/204 with no body for observe"},
	{"HTTP-3", "AHP-HTTP-001", tap.Error, "TLS is required off loopback"},
	{"AUTH-1", "AHP-AUTH-001", tap.Error, "one Authorization header; the bearer credential never appears in a body"},
	{"BASE-2", "AHP-VER-001", tap.Error, "protocolVersion equals the snapshot in every params and successful result"},
	{"BASE-3", "AHP-CORE-003", tap.Error, "unknown fields are ignored; unknown event types, effect types and enum values are unsupported semantics"},
	{"BASE-4", "AHP-EXT-001", tap.Error, "extension keys, deny codes and extension effect names are reverse-DNS"},
	{"BASE-5", "AHP-REG-001, AHP-REG-002", tap.Error, "the registration is valid and every event reaching the backend matches a subscription's events and mode"},
	{"BASE-6", "AHP-CORE-004", tap.Error, "event identity is preserved across retries"},
	{"BASE-7", "AHP-RPC-002", tap.Error, "unsupported requests get the defined JSON-RPC error; notifications get no response"},
	{"BASE-8", "", tap.Error, "every event carries harness with non-empty name and version (Base Protocol profile)"},
	{"BASE-9", "AHP-SEC-001, AHP-CAP-001, AHP-DEC-001", tap.Error, "no successful result weakens host controls: only advertised, allowed effects"},
	{"CORR-1", "AHP-CORE-004", tap.Error, "the JSON-RPC id of hooks/intercept equals params.event.id"},
	{"CORR-2", "AHP-RPC-001", tap.Error, "every request is answered exactly once with its id"},
	{"CORR-3", "AHP-FAIL-002", tap.Error, "responses arrive within the subscription's timeoutMs"},
	{"CAP-1", "AHP-CAP-002", tap.Error, "every hooks/intercept carries well-formed capabilities"},
	{"CAP-2", "AHP-RPC-001", tap.Error, "hooks/capabilities request and result shapes; the manifest follows §6.1"},
	{"EVT-1", "AHP-TB-001, AHP-RPC-002", tap.Error, "event envelope and per-type payload; only interceptable events in hooks/intercept"},
	{"EFF-1", "AHP-DEC-001, AHP-CORE-003", tap.Error, "every effect is a closed object of a defined type; one invalid effect invalidates the response"},
	{"EDIT-1", "AHP-CONTENT-001", tap.Error, "model, turn and context items are canonical message lists"},
	{"EDIT-2", "AHP-CONTENT-001", tap.Error, "text part variants: body text inline; metadata, omit and gap views carry no text or body"},
	{"EDIT-3", "AHP-CONTENT-002, AHP-EDIT-001", tap.Error, "attachments are immutable; no whole-list replace over hidden text parts"},
	{"EDIT-4", "AHP-EDIT-001", tap.Error, "modify values fit the target and the boundary"},
	{"EDIT-5", "AHP-EDIT-001", tap.Error, "replace, list merge and object merge semantics"},
	{"EDIT-6", "AHP-CAP-001", tap.Error, "an edit needs the exact advertised capability and body selection"},
	{"EDIT-7", "AHP-EDIT-001", tap.Error, "one invalid effect rejects every edit in the response"},
	{"EDIT-8", "AHP-CONTENT-001", tap.Error, "elicitation request/result text parts are complete MCP JSON that agrees with the envelope"},
	{"TAP-1", "", tap.Warn, "ahp-tap could not audit every frame (queue full or audit copy truncated); traffic was unaffected"},
	{"TAP-2", "", tap.Error, "an ahp-tap rule failed internally; traffic was unaffected"},
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
func info(ruleID, check, summary string) tap.RuleInfo {
	c, ok := CheckByID(check)
	if !ok {
		panic("rules: rule " + ruleID + " reports under unknown check " + check)
	}
	return tap.RuleInfo{ID: ruleID, Check: check, Requirement: c.Requirement, Level: c.Level, Summary: summary}
}

// warnInfo is info for a rule that reports a legal but suspicious fact
// under check, at level warn whatever the check's usual level.
func warnInfo(ruleID, check, summary string) tap.RuleInfo {
	ri := info(ruleID, check, summary)
	ri.Level = tap.Warn
	return ri
}
