package rules

import "github.com/ahp-tap/ahp-tap/tap"

// SDKs pinned to earlier states of the draft snapshot put predictable
// shapes on the wire. The findings stay what they are (same check, same
// level); the first such finding of a conversation gets one sentence
// naming the likely cause, and the run's summary a line (tap.Finding's
// OlderDraft). Never a finding of its own, never a lower level.

// An olderDraft names an earlier state of the draft, as a reader knows it.
type olderDraft string

// The earlier states whose shapes ahp-tap recognises (protocol-notes §12).
const (
	// size/sha256 inside a {ref} content reference or a ready attachment
	// part (§12 item 13).
	draftBeforeReceipts olderDraft = "the draft before content receipts and shared events"
	// text sent as an uploaded reference; messages without roles.
	draftBeforeInlineMessages olderDraft = "the draft before canonical inline messages"
	// tool.callId; protocolVersion "0.1" (§12 items 1 and 6).
	revision01 olderDraft = "the 0.1 revision"
	// mtls and workload authentication in the manifest, a registration's
	// authentication or a content upload's auth; a registration's content
	// selection nested in "categories" (§12 items 10 and 12: the state
	// some SDK builds pin, whose capabilities-response, content-upload and
	// registration schemas differ from the newest).
	draftWithWorkloadAuth olderDraft = "the draft with mTLS and workload authentication"
)

// olderAuthTypes are the authentication types of draftWithWorkloadAuth
// that the newest draft removed (AHP-AUTH-001: bearer and oauth only).
var olderAuthTypes = []string{"mtls", "workload"}

// olderDraftState remembers whether a conversation's hint was given.
type olderDraftState struct{ hinted bool }

// hintOlderDraft returns f with the older-draft hint added when the shape
// it reports matches d and it is the conversation's first such finding.
func hintOlderDraft(c *tap.Conversation, f tap.Finding, d olderDraft) tap.Finding {
	if d == "" {
		return f
	}
	st := c.RuleState("hint/older-draft", func() any { return &olderDraftState{} }).(*olderDraftState)
	if st.hinted {
		return f
	}
	st.hinted = true
	sender := "harness"
	if f.Dir == tap.FromBackend {
		sender = "backend"
	}
	return withOlderDraft(f, d, "the "+sender+"'s SDK may pin an older schema revision")
}

// withOlderDraft adds the hint sentence naming d to f.
func withOlderDraft(f tap.Finding, d olderDraft, cause string) tap.Finding {
	f.Message += ". This shape matches " + string(d) + "; " + cause
	f.OlderDraft = string(d)
	return f
}
