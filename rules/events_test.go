package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Building blocks for event frames.
const (
	tMsgs     = `[{"id":"m1","role":"user","parts":[{"id":"p1","kind":"text","mediaType":"text/plain","selection":"body","text":"hi"}]}]`
	tMsg      = `{"id":"m1","role":"assistant","parts":[]}`
	tTextPart = `{"id":"p1","kind":"text","mediaType":"text/plain","selection":"body","text":"hi"}`
	tTool     = `"tool":{"name":"Bash","input":{"command":"ls"},"origin":"native"}`
	tCall     = `"call":{"id":"c1"},` + tTool + `,"path":"native"`
	tModel    = `{"id":"m","provider":"p"}`
	tManifest = `{"events":[{"event":"tool.before","modes":["intercept","observe"],"capabilities":{"effects":["deny"]}},{"event":"turn.end","modes":["observe"]}],` +
		`"gaps":[],"transports":["stdio"],"authentication":[],"toolPaths":["native"],"contentCategories":["text"],"limits":{},` +
		`"managedPolicy":{"scopes":["user"],"disableable":true},"correlationIdentityFields":["id"]}`
)

// minimalPayloads are the smallest valid payloads of the 32 events.
var minimalPayloads = map[string]string{
	"session.start":            `"session":{"id":"s"},"trigger":"startup","permissionMode":"default","manifest":` + tManifest + `,"items":[]`,
	"session.end":              `"session":{"id":"s"},"outcome":"completed","reason":"exit"`,
	"tool.before":              tCall,
	"tool.after":               tCall + `,"outcome":"ok","execution":{"status":"executed"},"items":` + tMsgs,
	"config.change.before":     `"change":{"source":"user","scope":"project","settings":["a"],"summary":"s"}`,
	"config.change.after":      `"change":{"source":"user","scope":"project","settings":[],"summary":"s","mcpServers":[{}]}`,
	"turn.start":               `"turn":{"id":"t"},"trigger":"user","items":` + tMsgs,
	"turn.finish.before":       `"turn":{"id":"t"},"outcome":"completed","continuationCount":0,"items":[]`,
	"turn.end":                 `"turn":{"id":"t"},"outcome":"failed","continuationCount":1,"items":[],"error":{"message":"m","class":"c"}`,
	"turn.progress":            `"turn":{"id":"t"},"item":{"id":"i"},"delta":` + tMsg + `,"final":false`,
	"model.request.before":     `"model":` + tModel + `,"attempt":{"id":"a","number":1},"params":{},"items":[]`,
	"model.response.after":     `"model":` + tModel + `,"attempt":{"id":"a","number":1},"execution":{"status":"executed"},"items":[],"finishReason":"stop","usage":{"kind":"amount","scope":"attempt","completeness":"complete","provenance":"provider","inputTokens":3}`,
	"model.error":              `"model":` + tModel + `,"attempt":{"id":"a","number":2},"execution":{"status":"executed"},"error":{"message":"m","class":"rate_limit","status":429}`,
	"model.switch.before":      `"current":` + tModel + `,"proposed":` + tModel + `,"reason":"cost","pricing":{"currency":"USD"}`,
	"model.switch.after":       `"previous":` + tModel + `,"current":` + tModel + `,"reason":"cost"`,
	"tool.permission.request":  tCall + `,"suggestions":[{}],"sandboxBypass":false`,
	"tool.permission.resolved": tCall + `,"decision":"allow","decidedBy":"user"`,
	"tool.progress":            tCall + `,"partialOutput":` + tMsg + `,"backgrounded":true`,
	"tool.batch.after":         `"batch":{"id":"b"},"calls":[{` + tCall + `,"outcome":"denied","execution":{"status":"skipped","reason":"policy"}}]`,
	"context.compact.before":   `"trigger":"auto","items":[],"instructions":[` + tTextPart + `],"tokenCounts":{"before":10}`,
	"context.compact.after":    `"summary":[` + tTextPart + `],"removed":[{"id":"m1"}],"execution":{"status":"skipped","reason":"supplied_result"}`,
	"task.change.before":       `"task":{"id":"t","operation":"create","change":{"x":1}}`,
	"task.change.after":        `"task":{"id":"t","operation":"update","change":{},"prior":{}}`,
	"workspace.change.before":  `"workspace":{"kind":"cwd","change":{"cwd":"/a"},"prior":{"cwd":"/b"}}`,
	"workspace.change.after":   `"workspace":{"kind":"roots","change":{"workspaceRoots":["/a","/b"]}}`,
	"file.changed":             `"changes":[{"path":"/a","operation":"update","agentCaused":true,"after":` + tTextPart + `}]`,
	"user.attention":           `"attention":{"kind":"idle","message":[` + tTextPart + `],"title":[]}`,
	"user.elicitation.request": `"elicitation":{"server":"s","mode":"form","request":` + tTextPart + `}`,
	"user.elicitation.result":  `"elicitation":{"server":"s","mode":"url","action":"decline"}`,
	"user.message.inbound":     `"message":{"channel":"slack","sender":"u","messages":` + tMsgs + `}`,
	"user.message.outbound":    `"message":{"channel":"slack","messages":[` + tMsg + `]}`,
	"hook.failure":             `"parentEventId":"e0","failure":{"backendId":"b","reason":"timeout","policy":"fail-open"}`,
}

// event builds an event of type typ with the given payload members.
func eventJS(typ, payload string) string {
	return `{"id":"e1","source":"urn:test:h","type":"` + typ + `","time":"2026-09-15T12:00:00Z","harness":{"name":"h","version":"1"},` + payload + `}`
}

func observeJS(event string) string {
	return `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":` + event + `}}`
}

func interceptJS(event, caps string) string {
	return `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":` + event + `,"capabilities":` + caps + `}}`
}

// shapeFindings runs the shape rules over frames in one conversation.
func shapeFindings(frames ...*tap.Frame) []tap.Finding {
	return runRules(tap.Config{Partial: true}, shapeRulesOnly(), frames...)
}

func TestEventCatalogueMinimalValid(t *testing.T) {
	if len(minimalPayloads) != 32 || len(eventSpecs) != 32 || len(eventTypes) != 32 {
		t.Fatalf("catalogue sizes: payloads %d, specs %d, types %d, want 32", len(minimalPayloads), len(eventSpecs), len(eventTypes))
	}
	for typ, payload := range minimalPayloads {
		t.Run(typ, func(t *testing.T) {
			if fs := shapeFindings(harnessFrame(observeJS(eventJS(typ, payload)))); len(fs) != 0 {
				t.Errorf("observe %s: findings:%s", typ, dump(fs))
			}
			if !eventSpecs[typ].interceptable {
				return
			}
			caps := `{"effects":["message"]}`
			if typ == "tool.before" {
				caps = `{"effects":["deny"]}`
			}
			if fs := shapeFindings(harnessFrame(interceptJS(eventJS(typ, payload), caps))); len(fs) != 0 {
				t.Errorf("intercept %s: findings:%s", typ, dump(fs))
			}
		})
	}
}

func TestEventViolations(t *testing.T) {
	mp := minimalPayloads
	env := func(replace, with string) string {
		return strings.Replace(eventJS("tool.before", mp["tool.before"]), replace, with, 1)
	}
	tests := []struct {
		name  string
		frame string
		check string
		want  int
	}{
		// envelope (§3.1)
		{"id empty", observeJS(env(`"id":"e1"`, `"id":""`)), "EVT-1", 1},
		{"id missing", observeJS(env(`"id":"e1",`, ``)), "EVT-1", 1},
		{"source relative", observeJS(env(`"urn:test:h"`, `"example"`)), "EVT-1", 1},
		{"source with space", observeJS(env(`"urn:test:h"`, `"https://bad host/"`)), "EVT-1", 1},
		{"source bad escape", observeJS(env(`"urn:test:h"`, `"https://h/%zz"`)), "EVT-1", 1},
		{"time compact", observeJS(env(`"2026-09-15T12:00:00Z"`, `"20260915T120000+0000"`)), "EVT-1", 1},
		{"time space", observeJS(env(`"2026-09-15T12:00:00Z"`, `"2026-09-15 12:00:00Z"`)), "EVT-1", 1},
		{"time trailing space", observeJS(env(`"2026-09-15T12:00:00Z"`, `"2026-09-15T12:00:00Z "`)), "EVT-1", 1},
		{"time no zone", observeJS(env(`"2026-09-15T12:00:00Z"`, `"2026-09-15T12:00:00"`)), "EVT-1", 1},
		{"time bad day", observeJS(env(`"2026-09-15T12:00:00Z"`, `"2026-02-30T12:00:00Z"`)), "EVT-1", 1},
		{"time offset and fraction ok", observeJS(env(`"2026-09-15T12:00:00Z"`, `"2024-02-29T23:59:59.5+05:30"`)), "EVT-1", 0},
		{"parentEventId empty", observeJS(env(`"harness"`, `"parentEventId":"","harness"`)), "EVT-1", 1},
		{"extensions not object", observeJS(env(`"harness"`, `"extensions":[],"harness"`)), "EVT-1", 1},
		{"synthesized string", observeJS(env(`"harness"`, `"synthesized":"true","harness"`)), "EVT-1", 1},
		{"session without id", observeJS(env(`"harness"`, `"session":{"cwd":"/"},"harness"`)), "EVT-1", 1},
		{"gap without reason", observeJS(env(`"harness"`, `"gaps":[{"path":"x"}],"harness"`)), "EVT-1", 1},
		{"unknown top-level member is fine", observeJS(env(`"harness"`, `"x-vendor":{"a":1},"native":"anything","harness"`)), "EVT-1", 0},
		{"unknown type: envelope only", observeJS(eventJS("tool.error", `"items":"not checked"`)), "EVT-1", 0},
		{"unknown type: bad envelope", observeJS(strings.Replace(eventJS("tool.error", `"x":1`), `"urn:test:h"`, `"nope"`, 1)), "EVT-1", 1},
		{"event not an object", `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":"x"}}`, "EVT-1", 1},
		{"event missing", `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft"}}`, "EVT-1", 1},
		{"observe-only event in intercept", interceptJS(eventJS("session.end", mp["session.end"]), `{"effects":[]}`), "EVT-1", 1},

		// shared sub-objects (§3.2)
		{"tool closed", observeJS(env(`"origin":"native"`, `"origin":"native","output":"x"`)), "EVT-1", 1},
		{"tool callId legacy", observeJS(env(`"origin":"native"`, `"origin":"native","callId":"c"`)), "EVT-1", 1},
		{"tool origin enum", observeJS(env(`"origin":"native"`, `"origin":"plugin"`)), "EVT-1", 1},
		{"tool input string", observeJS(env(`{"command":"ls"}`, `"{\"command\":\"ls\"}"`)), "EVT-1", 1},
		{"mcp origin without mcp", observeJS(env(`"origin":"native"`, `"origin":"mcp"`)), "EVT-1", 1},
		{"mcp on native tool", observeJS(env(`"origin":"native"`, `"origin":"native","mcp":{"server":{"id":"s"},"toolName":"t","provenance":"runtime","connection":{"transport":"stdio","command":"x","args":[],"cwd":"/"}}`)), "EVT-1", 1},
		{"mcp stdio ok", observeJS(env(`"origin":"native"`, `"origin":"mcp","mcp":{"server":{"id":"s"},"toolName":"t","provenance":"runtime","connection":{"transport":"stdio","command":"x","args":[],"gaps":[{"path":"cwd","reason":"unknown"}]}}`)), "EVT-1", 0},
		{"mcp http url missing", observeJS(env(`"origin":"native"`, `"origin":"mcp","mcp":{"server":{"id":"s"},"toolName":"t","provenance":"runtime","connection":{"transport":"http"}}`)), "EVT-1", 1},
		{"mcp http url not http", observeJS(env(`"origin":"native"`, `"origin":"mcp","mcp":{"server":{"id":"s"},"toolName":"t","provenance":"runtime","connection":{"transport":"sse","url":"ftp://x"}}`)), "EVT-1", 1},
		{"mcp extension transport", observeJS(env(`"origin":"native"`, `"origin":"mcp","mcp":{"server":{"id":"s"},"toolName":"t","provenance":"inferred","connection":{"transport":"_unix","addressForm":"path","address":"/s"}}`)), "EVT-1", 0},
		{"mcp unknown transport", observeJS(env(`"origin":"native"`, `"origin":"mcp","mcp":{"server":{"id":"s"},"toolName":"t","provenance":"inferred","connection":{"transport":"unix"}}`)), "EVT-1", 1},
		{"call closed", observeJS(env(`"call":{"id":"c1"}`, `"call":{"id":"c1","x":1}`)), "EVT-1", 1},
		{"batch callIds unique", observeJS(env(`"path":"native"`, `"path":"native","batch":{"id":"b","callIds":["a","a"]}`)), "EVT-1", 1},
		{"batch callIds empty", observeJS(env(`"path":"native"`, `"path":"native","batch":{"id":"b","callIds":[]}`)), "EVT-1", 1},
		{"path empty", observeJS(env(`"path":"native"`, `"path":""`)), "EVT-1", 1},

		// per-type payloads (§3.3)
		{"tool.before forbids outcome", observeJS(env(`"path":"native"`, `"path":"native","outcome":"ok","durationMs":3`)), "EVT-1", 2},
		{"tool.before turn is open", observeJS(env(`"path":"native"`, `"path":"native","turn":{"id":"t","x":1}`)), "EVT-1", 0},
		{"tool.after error without outcome error", observeJS(eventJS("tool.after", mp["tool.after"]+`,"error":{"message":"m","class":"c"}`)), "EVT-1", 1},
		{"tool.after outcome error without error", observeJS(eventJS("tool.after", strings.Replace(mp["tool.after"], `"ok"`, `"error"`, 1))), "EVT-1", 1},
		{"tool.after error message missing", observeJS(eventJS("tool.after", strings.Replace(mp["tool.after"], `"ok"`, `"error"`, 1)+`,"error":{"class":"c"}`)), "EVT-1", 1},
		{"tool.after denied executed", observeJS(eventJS("tool.after", strings.Replace(mp["tool.after"], `"ok"`, `"denied"`, 1))), "EVT-1", 1},
		{"tool.after skipped with duration", observeJS(eventJS("tool.after", strings.Replace(mp["tool.after"], `{"status":"executed"}`, `{"status":"skipped","reason":"cancelled","detail":"x"}`, 1)+`,"durationMs":1`)), "EVT-1", 1},
		{"tool.after supplied with detail", observeJS(eventJS("tool.after", strings.Replace(mp["tool.after"], `{"status":"executed"}`, `{"status":"skipped","reason":"supplied_result","detail":"x"}`, 1))), "EVT-1", 1},
		{"tool.after execution unknown reason", observeJS(eventJS("tool.after", strings.Replace(mp["tool.after"], `{"status":"executed"}`, `{"status":"skipped","reason":"why"}`, 1))), "EVT-1", 1},
		{"tool.after items missing", observeJS(eventJS("tool.after", strings.Replace(mp["tool.after"], `,"items":`+tMsgs, ``, 1))), "EVT-1", 1},
		{"tool.after fileChange moved without previousPath", observeJS(eventJS("tool.after", mp["tool.after"]+`,"fileChanges":[{"path":"a","change":"moved"}]`)), "EVT-1", 1},
		{"tool.after fileChange created with before", observeJS(eventJS("tool.after", mp["tool.after"]+`,"fileChanges":[{"path":"a","change":"created","before":`+tTextPart+`}]`)), "EVT-1", 1},
		{"session.start tool", observeJS(eventJS("session.start", mp["session.start"]+`,`+tTool)), "EVT-1", 1},
		{"session.start fork without resumedFrom", observeJS(eventJS("session.start", strings.Replace(mp["session.start"], `"startup"`, `"fork"`, 1))), "EVT-1", 1},
		{"session.start harness extra key", observeJS(strings.Replace(eventJS("session.start", mp["session.start"]), `"version":"1"}`, `"version":"1","vendor":"x"}`, 1)), "EVT-1", 1},
		{"session.start manifest identity", observeJS(eventJS("session.start", strings.Replace(mp["session.start"], `"gaps":[]`, `"gaps":[],"identity":{}`, 1))), "EVT-1", 1},
		{"session.start manifest missing", observeJS(eventJS("session.start", strings.Replace(mp["session.start"], `"manifest":`+tManifest+`,`, ``, 1))), "EVT-1", 1},
		{"session.end outcome enum", observeJS(eventJS("session.end", strings.Replace(mp["session.end"], `"completed"`, `"done"`, 1))), "EVT-1", 1},
		{"session.end counters negative", observeJS(eventJS("session.end", mp["session.end"]+`,"counters":{"turns":-1}`)), "EVT-1", 1},
		{"turn.start turn closed", observeJS(eventJS("turn.start", strings.Replace(mp["turn.start"], `{"id":"t"}`, `{"id":"t","x":1}`, 1))), "EVT-1", 1},
		{"turn.start trigger enum", observeJS(eventJS("turn.start", strings.Replace(mp["turn.start"], `"user"`, `"timer"`, 1))), "EVT-1", 1},
		{"turn.end completed with error", observeJS(eventJS("turn.end", strings.Replace(mp["turn.end"], `"failed"`, `"completed"`, 1))), "EVT-1", 1},
		{"turn.finish.before usage must be turn", observeJS(eventJS("turn.finish.before", mp["turn.finish.before"]+`,"usage":{"kind":"amount","scope":"attempt","completeness":"complete","provenance":"provider"}`)), "EVT-1", 2},
		{"turn.finish.before continuationCount negative", observeJS(eventJS("turn.finish.before", strings.Replace(mp["turn.finish.before"], `"continuationCount":0`, `"continuationCount":-1`, 1))), "EVT-1", 1},
		{"model.request.before forbids usage", observeJS(eventJS("model.request.before", mp["model.request.before"]+`,"latencyMs":3`)), "EVT-1", 1},
		{"model.request.before attempt number 0", observeJS(eventJS("model.request.before", strings.Replace(mp["model.request.before"], `"number":1`, `"number":0`, 1))), "EVT-1", 1},
		{"model.request.before model closed", observeJS(eventJS("model.request.before", strings.Replace(mp["model.request.before"], `"provider":"p"}`, `"provider":"p","version":"2"}`, 1))), "EVT-1", 1},
		{"model.response.after skipped policy", observeJS(eventJS("model.response.after", strings.Replace(mp["model.response.after"], `{"status":"executed"}`, `{"status":"skipped","reason":"policy"}`, 1))), "EVT-1", 2},
		{"model.response.after usage cost currency", observeJS(eventJS("model.response.after", strings.Replace(mp["model.response.after"], `"inputTokens":3`, `"cost":{"amount":1,"currency":"usd","basis":"billed"}`, 1))), "EVT-1", 1},
		{"model.response.after mixed provenance", observeJS(eventJS("model.response.after", strings.Replace(mp["model.response.after"], `"provider","input`, `"mixed","input`, 1))), "EVT-1", 1},
		{"model.error skipped", observeJS(eventJS("model.error", strings.Replace(mp["model.error"], `{"status":"executed"}`, `{"status":"skipped","reason":"timeout"}`, 1))), "EVT-1", 1},
		{"model.error error status float", observeJS(eventJS("model.error", strings.Replace(mp["model.error"], `429`, `4.5`, 1))), "EVT-1", 1},
		{"model.switch.before previous", observeJS(eventJS("model.switch.before", mp["model.switch.before"]+`,"previous":`+tModel)), "EVT-1", 1},
		{"model.switch.after proposed", observeJS(eventJS("model.switch.after", mp["model.switch.after"]+`,"proposed":`+tModel)), "EVT-1", 1},
		{"tool.permission.request decision", observeJS(eventJS("tool.permission.request", mp["tool.permission.request"]+`,"decision":"allow"`)), "EVT-1", 1},
		{"tool.permission.request suggestions strings", observeJS(eventJS("tool.permission.request", strings.Replace(mp["tool.permission.request"], `[{}]`, `["x"]`, 1))), "EVT-1", 1},
		{"tool.permission.resolved decidedBy enum", observeJS(eventJS("tool.permission.resolved", strings.Replace(mp["tool.permission.resolved"], `"user"`, `"admin"`, 1))), "EVT-1", 1},
		{"tool.progress outcome", observeJS(eventJS("tool.progress", mp["tool.progress"]+`,"outcome":"ok"`)), "EVT-1", 1},
		{"tool.batch.after calls empty", observeJS(eventJS("tool.batch.after", `"batch":{"id":"b"},"calls":[]`)), "EVT-1", 1},
		{"tool.batch.after denied executed", observeJS(eventJS("tool.batch.after", strings.Replace(mp["tool.batch.after"], `{"status":"skipped","reason":"policy"}`, `{"status":"executed"}`, 1))), "EVT-1", 1},
		{"context.compact.before tokenCounts.after", observeJS(eventJS("context.compact.before", strings.Replace(mp["context.compact.before"], `{"before":10}`, `{"before":10,"after":5}`, 1))), "EVT-1", 1},
		{"context.compact.before summary", observeJS(eventJS("context.compact.before", mp["context.compact.before"]+`,"summary":[]`)), "EVT-1", 1},
		{"context.compact.after skipped other", observeJS(eventJS("context.compact.after", strings.Replace(mp["context.compact.after"], `"supplied_result"`, `"other"`, 1))), "EVT-1", 1},
		{"context.compact.after removed closed", observeJS(eventJS("context.compact.after", strings.Replace(mp["context.compact.after"], `{"id":"m1"}`, `{"id":"m1","role":"user"}`, 1))), "EVT-1", 1},
		{"task id missing", observeJS(eventJS("task.change.before", strings.Replace(mp["task.change.before"], `"id":"t",`, ``, 1))), "EVT-1", 1},
		{"task change is open", observeJS(eventJS("task.change.after", strings.Replace(mp["task.change.after"], `"change":{}`, `"change":{"anything":[1]}`, 1))), "EVT-1", 0},
		{"task closed", observeJS(eventJS("task.change.after", strings.Replace(mp["task.change.after"], `"prior":{}`, `"prior":{},"title":"x"`, 1))), "EVT-1", 1},
		{"workspace change empty", observeJS(eventJS("workspace.change.before", strings.Replace(mp["workspace.change.before"], `{"cwd":"/a"}`, `{}`, 1))), "EVT-1", 1},
		{"workspace kind enum", observeJS(eventJS("workspace.change.after", strings.Replace(mp["workspace.change.after"], `"roots"`, `"root"`, 1))), "EVT-1", 1},
		{"file.changed operation vocabulary", observeJS(eventJS("file.changed", strings.Replace(mp["file.changed"], `"update"`, `"modified"`, 1))), "EVT-1", 1},
		{"file.changed empty", observeJS(eventJS("file.changed", `"changes":[]`)), "EVT-1", 1},
		{"config change closed", observeJS(eventJS("config.change.before", strings.Replace(mp["config.change.before"], `"summary":"s"`, `"summary":"s","mcpServers":[]`, 1))), "EVT-1", 1},
		{"elicitation mode enum", observeJS(eventJS("user.elicitation.request", strings.Replace(mp["user.elicitation.request"], `"form"`, `"modal"`, 1))), "EVT-1", 1},
		{"elicitation result action missing", observeJS(eventJS("user.elicitation.result", strings.Replace(mp["user.elicitation.result"], `,"action":"decline"`, ``, 1))), "EVT-1", 1},
		{"hook.failure without parent", observeJS(eventJS("hook.failure", strings.Replace(mp["hook.failure"], `"parentEventId":"e0",`, ``, 1))), "EVT-1", 1},
		{"hook.failure policy enum", observeJS(eventJS("hook.failure", strings.Replace(mp["hook.failure"], `"fail-open"`, `"open"`, 1))), "EVT-1", 1},
		{"user.attention title missing", observeJS(eventJS("user.attention", strings.Replace(mp["user.attention"], `,"title":[]`, ``, 1))), "EVT-1", 1},

		// content slots (§8), reported as EDIT-1/EDIT-2
		{"tool.after items are messages", observeJS(eventJS("tool.after", strings.Replace(mp["tool.after"], tMsgs, `[`+tTextPart+`]`, 1))), "EDIT-1", 1},
		{"tool.before items are parts", observeJS(env(`"path":"native"`, `"path":"native","items":`+tMsgs)), "EDIT-2", 1},
		{"inbound role user", observeJS(eventJS("user.message.inbound", strings.Replace(mp["user.message.inbound"], `"role":"user"`, `"role":"assistant"`, 1))), "EDIT-1", 1},
		{"outbound role assistant", observeJS(eventJS("user.message.outbound", strings.Replace(mp["user.message.outbound"], `"role":"assistant"`, `"role":"user"`, 1))), "EDIT-1", 1},
		{"turn.progress delta one message", observeJS(eventJS("turn.progress", strings.Replace(mp["turn.progress"], tMsg, `[`+tMsg+`]`, 1))), "EDIT-1", 1},
		{"summary text parts only", observeJS(eventJS("context.compact.after", strings.Replace(mp["context.compact.after"], tTextPart, `{"id":"a","kind":"attachment","mediaType":"image/png","selection":"omit"}`, 1))), "EDIT-2", 1},
		{"elicitation request one text part", observeJS(eventJS("user.elicitation.request", strings.Replace(mp["user.elicitation.request"], tTextPart, `[`+tTextPart+`]`, 1))), "EDIT-2", 1},
		{"file.changed after part", observeJS(eventJS("file.changed", strings.Replace(mp["file.changed"], `"selection":"body","text":"hi"`, `"selection":"metadata","text":"hi"`, 1))), "EDIT-2", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := shapeFindings(harnessFrame(tt.frame))
			wantFindings(t, fs, tt.check, tt.want)
			if tt.want == 0 && len(fs) > 0 {
				t.Errorf("unexpected findings:%s", dump(fs))
			}
		})
	}
}

func TestEventPointer(t *testing.T) {
	fs := shapeFindings(harnessFrame(observeJS(eventJS("tool.before", strings.Replace(minimalPayloads["tool.before"], `"origin":"native"`, `"origin":"native","output":1`, 1)))))
	if len(fs) != 1 || fs[0].Pointer != "/params/event/tool/output" || fs[0].Rule != "EVT-1/event" || fs[0].EventID != "e1" {
		t.Fatalf("findings = %s, want one EVT-1 at /params/event/tool/output", dump(fs))
	}
}

func TestFormats(t *testing.T) {
	times := map[string]bool{
		"2026-09-15T12:00:00Z":           true,
		"1963-06-19t08:30:06.283185z":    true, // RFC 3339 §5.6: T and Z in any case
		"2026-01-01T00:00:00+23:59":      true,
		"1998-12-31T23:59:60Z":           true, // a leap second, at 23:59:60 UTC only
		"1998-12-31T15:59:60.123-08:00":  true,
		"1998-12-31T23:59:61Z":           false,
		"1998-12-31T23:58:60Z":           false,
		"1998-12-31T22:59:60Z":           false,
		"2026-01-01T00:00:00+24:00":      false,
		"2026-01-01T00:00:00.Z":          false,
		"2026-01-01T00:00:00+0000":       false,
		"20260915T120000Z":               false,
		"2026-09-15":                     false,
		"2026-09-15T12:00Z":              false,
		"2026-13-01T00:00:00Z":           false,
		"2023-02-29T00:00:00Z":           false,
		"2000-02-29T00:00:00Z":           true,
		"1900-02-29T00:00:00Z":           false,
		" 2026-09-15T12:00:00Z":          false,
		"2026-09-15T12:00:00Z\n":         false,
		"2026-09-15T12:00:00.123456789Z": true,
	}
	for s, want := range times {
		if got := isRFC3339(s); got != want {
			t.Errorf("isRFC3339(%q) = %v, want %v", s, got, want)
		}
	}
	uris := map[string]bool{
		"urn:test:harness":                              true,
		"https://harness.example/runtime/42":            true,
		"urn:uuid:5b7de29e-a9e0-41a8-bf26-d94b05f0656d": true,
		"mailto:":           true,
		"a+b.c-d:x?y#z":     true,
		"https://h/%41%7a":  true,
		"example":           false,
		"/relative/path":    false,
		"1http://x":         false,
		"https://bad host/": false,
		"https://h/%zz":     false,
		"https://h/%4":      false,
		"https://h/\u00e9":  false,
		"":                  false,
		"://x":              false,
	}
	for s, want := range uris {
		if got := isAbsoluteURI(s); got != want {
			t.Errorf("isAbsoluteURI(%q) = %v, want %v", s, got, want)
		}
	}
}
