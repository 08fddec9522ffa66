package rules

import (
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestAuthority(t *testing.T) {
	tests := []struct {
		name    string
		evType  string
		caps    string
		effects string
		want    int
	}{
		{"advertised deny", "tool.before", `{"effects":["deny"]}`, `[{"type":"deny","reason":"r"}]`, 0},
		{"no effect", "tool.before", `{"effects":["deny"]}`, `[]`, 0},
		{"unadvertised allow", "tool.before", `{"effects":["deny"]}`, `[{"type":"allow"}]`, 1},
		{"no capabilities at all", "tool.before", `{}`, `[{"type":"deny","reason":"r"}]`, 1},
		{"return not at turn.start", "turn.start", `{"effects":["deny","return"]}`, `[{"type":"return","value":1}]`, 1},
		{"return at model.request.before", "model.request.before", `{"effects":["return"]}`, `[{"type":"return","value":[]}]`, 0},
		{"deny not at turn.finish.before", "turn.finish.before", `{"effects":["message"]}`, `[{"type":"deny","reason":"r"}]`, 2},
		{"message anywhere", "config.change.before", `{"effects":["message"]}`, `[{"type":"message","text":"hi"}]`, 0},
		{"stop advertised", "tool.before", `{"effects":["flow"],"flow":{"operations":["stop"]}}`, `[{"type":"flow","operation":"stop","reason":"r"}]`, 0},
		{"stop not advertised", "tool.before", `{"effects":["flow"],"flow":{"operations":["continue"],"remainingContinuations":1,"continuationCount":0}}`, `[{"type":"flow","operation":"stop","reason":"r"}]`, 1},
		{"continue at tool.before", "tool.before", `{"effects":["flow"],"flow":{"operations":["stop","continue"],"remainingContinuations":1,"continuationCount":0}}`, `[{"type":"flow","operation":"continue"}]`, 1},
		{"continue at tool.after", "tool.after", `{"effects":["flow"],"flow":{"operations":["stop","continue"],"remainingContinuations":1,"continuationCount":0}}`, `[{"type":"flow","operation":"continue"}]`, 0},
		{"continue exhausted", "turn.finish.before", `{"effects":["flow"],"flow":{"operations":["continue"],"remainingContinuations":0,"continuationCount":3}}`, `[{"type":"flow","operation":"continue"}]`, 1},
		{"inject deliverAt advertised", "turn.start", `{"effects":["inject"],"inject":{"context":{"append":true,"deliverAt":["now","next_turn"]}}}`, `[{"type":"inject","target":"context","operation":"append","deliverAt":"next_turn","value":[]}]`, 0},
		{"inject deliverAt not advertised", "turn.start", `{"effects":["inject"],"inject":{"context":{"append":true,"deliverAt":["now"]}}}`, `[{"type":"inject","target":"context","operation":"append","deliverAt":"next_turn","value":[]}]`, 1},
		{"extension effect advertised", "tool.before", `{"effects":["deny","com.example.quarantine"]}`, `[{"type":"com.example.quarantine"}]`, 0},
		{"extension effects are EFF-1's", "tool.before", `{"effects":["deny"]}`, `[{"type":"com.example.quarantine"}]`, 0},
		{"undefined effect type is EFF-1's", "tool.before", `{"effects":["deny"]}`, `[{"type":"grant"}]`, 0},
		{"modify targets are EDIT-6's", "tool.before", `{"effects":["modify"],"modify":{"input":{"merge":true}}}`, `[{"type":"modify","target":"input","operation":"replace","value":{}}]`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{}, authorityRules(),
				harnessFrame(convIntercept("e1", convEvent("e1", tt.evType, ""), tt.caps)),
				backendFrame(convResult("e1", tt.effects)))
			wantFindings(t, fs, "BASE-9", tt.want)
		})
	}
}

func TestAuthorityNeedsTheRequest(t *testing.T) {
	res := backendFrame(convResult("e1", `[{"type":"allow"}]`))
	wantFindings(t, runRules(tap.Config{Partial: true}, authorityRules(), res), "BASE-9", 0)
	// An error response claims nothing.
	fs := runRules(tap.Config{}, authorityRules(),
		harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps)),
		backendFrame(convError("e1", -32004)))
	wantFindings(t, fs, "BASE-9", 0)
}
