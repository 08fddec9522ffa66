// Package vocab is the protocol's vocabulary and ahp-tap's check IDs, in
// one place at the bottom of the house: the AHP methods, the stdio
// lifecycles, the 32 event types (with whether each may be intercepted),
// the core effect types, the modify targets, what each interceptable
// boundary allows, and every check ID of the catalogue as a typed
// constant. It imports nothing of ahp-tap's; tap, rules and every other
// package read the names here rather than writing them out again.
//
// The tables follow the AHP draft snapshot (protocol-notes §2.1, §3.3,
// §4.1, §4.3); rules/vocabulary_test.go checks them against the upstream
// schemas, so a change here or upstream breaks a test. Check IDs are a
// public interface (logs, SARIF rule IDs, baselines): they never change
// meaning. rules.Catalogue says what each one checks.
package vocab

// A CheckID is the ID of one check of the catalogue ("BASE-2"). A finding
// carries exactly one. Check IDs are typed, so that a function taking one
// says so; the protocol's own names (methods, lifecycles, event types,
// effect types, modify targets) are untyped string constants, because
// they are compared with what the wire carries, which is a string.
type CheckID string

// The checks of the catalogue, in catalogue order (rules.Catalogue,
// docs/checks.md).
const (
	Base1  CheckID = "BASE-1"
	Stdio1 CheckID = "STDIO-1"
	Stdio2 CheckID = "STDIO-2"
	Stdio3 CheckID = "STDIO-3"
	HTTP1  CheckID = "HTTP-1"
	HTTP2  CheckID = "HTTP-2"
	HTTP3  CheckID = "HTTP-3"
	Auth1  CheckID = "AUTH-1"
	Base2  CheckID = "BASE-2"
	Base3  CheckID = "BASE-3"
	Base4  CheckID = "BASE-4"
	Base5  CheckID = "BASE-5"
	Base6  CheckID = "BASE-6"
	Base7  CheckID = "BASE-7"
	Base8  CheckID = "BASE-8"
	Base9  CheckID = "BASE-9"
	Corr1  CheckID = "CORR-1"
	Corr2  CheckID = "CORR-2"
	Corr3  CheckID = "CORR-3"
	Cap1   CheckID = "CAP-1"
	Cap2   CheckID = "CAP-2"
	Evt1   CheckID = "EVT-1"
	Eff1   CheckID = "EFF-1"
	Edit1  CheckID = "EDIT-1"
	Edit2  CheckID = "EDIT-2"
	Edit3  CheckID = "EDIT-3"
	Edit4  CheckID = "EDIT-4"
	Edit5  CheckID = "EDIT-5"
	Edit6  CheckID = "EDIT-6"
	Edit7  CheckID = "EDIT-7"
	Edit8  CheckID = "EDIT-8"
	// The conduct checks judge one harness's dispatch across the links of
	// a registration (the conduct package).
	Cond1  CheckID = "COND-1"
	Cond2  CheckID = "COND-2"
	Cond3  CheckID = "COND-3"
	Cond4  CheckID = "COND-4"
	Cond5  CheckID = "COND-5"
	Cond6  CheckID = "COND-6"
	Cond7  CheckID = "COND-7"
	Cond8  CheckID = "COND-8"
	Cond9  CheckID = "COND-9"
	Cond10 CheckID = "COND-10"
	Cond11 CheckID = "COND-11"
	// Tap1 and Tap2 are ahp-tap's own facts about the audit, never about
	// the traffic.
	Tap1 CheckID = "TAP-1"
	Tap2 CheckID = "TAP-2"
)

// Checks lists every check ID, in catalogue order.
var Checks = []CheckID{
	Base1, Stdio1, Stdio2, Stdio3, HTTP1, HTTP2, HTTP3, Auth1,
	Base2, Base3, Base4, Base5, Base6, Base7, Base8, Base9,
	Corr1, Corr2, Corr3, Cap1, Cap2, Evt1, Eff1,
	Edit1, Edit2, Edit3, Edit4, Edit5, Edit6, Edit7, Edit8,
	Cond1, Cond2, Cond3, Cond4, Cond5, Cond6, Cond7, Cond8, Cond9, Cond10, Cond11,
	Tap1, Tap2,
}

// String returns the ID as written ("BASE-2").
func (c CheckID) String() string { return string(c) }

// Known reports whether c is a check of the catalogue.
func (c CheckID) Known() bool {
	for _, k := range Checks {
		if k == c {
			return true
		}
	}
	return false
}

// The three AHP methods (§2.1).
const (
	MethodIntercept    = "hooks/intercept"
	MethodObserve      = "hooks/observe"
	MethodCapabilities = "hooks/capabilities"
)

// Methods are the AHP methods, in §2.1 order.
var Methods = []string{MethodIntercept, MethodObserve, MethodCapabilities}

// The stdio lifecycles of a registration's transport (§1.2).
const (
	LifecyclePersistent = "persistent"
	LifecyclePerEvent   = "per_event"
)

// Lifecycles are the stdio lifecycles.
var Lifecycles = []string{LifecyclePersistent, LifecyclePerEvent}

// The standard event types (§3.3), as written on the wire.
const (
	EventToolBefore             = "tool.before"
	EventToolAfter              = "tool.after"
	EventSessionStart           = "session.start"
	EventConfigChangeBefore     = "config.change.before"
	EventTurnStart              = "turn.start"
	EventTurnFinishBefore       = "turn.finish.before"
	EventModelRequestBefore     = "model.request.before"
	EventModelSwitchBefore      = "model.switch.before"
	EventToolPermissionRequest  = "tool.permission.request"
	EventToolBatchAfter         = "tool.batch.after"
	EventContextCompactBefore   = "context.compact.before"
	EventContextCompactAfter    = "context.compact.after"
	EventTaskChangeBefore       = "task.change.before"
	EventUserElicitationRequest = "user.elicitation.request"
	EventUserElicitationResult  = "user.elicitation.result"
	EventUserMessageInbound     = "user.message.inbound"
	EventUserMessageOutbound    = "user.message.outbound"
	EventWorkspaceChangeBefore  = "workspace.change.before"
	EventModelResponseAfter     = "model.response.after"
	EventSessionEnd             = "session.end"
	EventConfigChangeAfter      = "config.change.after"
	EventTurnEnd                = "turn.end"
	EventTurnProgress           = "turn.progress"
	EventModelError             = "model.error"
	EventModelSwitchAfter       = "model.switch.after"
	EventToolPermissionResolved = "tool.permission.resolved"
	EventToolProgress           = "tool.progress"
	EventTaskChangeAfter        = "task.change.after"
	EventUserAttention          = "user.attention"
	EventWorkspaceChangeAfter   = "workspace.change.after"
	EventFileChanged            = "file.changed"
	EventHookFailure            = "hook.failure"
)

// An Event is one of the standard event types (§3.3).
type Event struct {
	Name          string
	Interceptable bool // may travel in hooks/intercept
}

// Events are the 32 standard event types of the draft, the 19
// interceptable ones first. Any other type, removed names such as
// tool.error and prompt.submitted included, is unsupported semantics
// (AHP-CORE-003).
var Events = []Event{
	{EventToolBefore, true},
	{EventToolAfter, true},
	{EventSessionStart, true},
	{EventConfigChangeBefore, true},
	{EventTurnStart, true},
	{EventTurnFinishBefore, true},
	{EventModelRequestBefore, true},
	{EventModelSwitchBefore, true},
	{EventToolPermissionRequest, true},
	{EventToolBatchAfter, true},
	{EventContextCompactBefore, true},
	{EventContextCompactAfter, true},
	{EventTaskChangeBefore, true},
	{EventUserElicitationRequest, true},
	{EventUserElicitationResult, true},
	{EventUserMessageInbound, true},
	{EventUserMessageOutbound, true},
	{EventWorkspaceChangeBefore, true},
	{EventModelResponseAfter, true},

	{EventSessionEnd, false},
	{EventConfigChangeAfter, false},
	{EventTurnEnd, false},
	{EventTurnProgress, false},
	{EventModelError, false},
	{EventModelSwitchAfter, false},
	{EventToolPermissionResolved, false},
	{EventToolProgress, false},
	{EventTaskChangeAfter, false},
	{EventUserAttention, false},
	{EventWorkspaceChangeAfter, false},
	{EventFileChanged, false},
	{EventHookFailure, false},
}

// The core effect types (§4.1).
const (
	EffectDeny    = "deny"
	EffectAllow   = "allow"
	EffectAsk     = "ask"
	EffectModify  = "modify"
	EffectMessage = "message"
	EffectReturn  = "return"
	EffectFlow    = "flow"
	EffectInject  = "inject"
)

// Effects are the effect types AHP defines (§4.1); any other name is an
// extension effect (reverse-DNS).
var Effects = []string{EffectDeny, EffectAllow, EffectAsk, EffectModify, EffectMessage, EffectReturn, EffectFlow, EffectInject}

// ModifyTargets are the targets a modify effect can name (§4.1).
var ModifyTargets = []string{TargetInput, TargetOutput, TargetPrompt, TargetRequest, TargetResponse, TargetContent, TargetInstructions, TargetSummary, TargetWorkspace}

// The modify targets (§4.1, §4.4).
const (
	TargetInput        = "input"
	TargetOutput       = "output"
	TargetPrompt       = "prompt"
	TargetRequest      = "request"
	TargetResponse     = "response"
	TargetContent      = "content"
	TargetInstructions = "instructions"
	TargetSummary      = "summary"
	TargetWorkspace    = "workspace"
)

// A Boundary says what an interceptable event allows (§4.3).
type Boundary struct {
	Effects []string
	Target  string   // the modify target, "" for none
	FlowOps []string // flow operations
}

// Boundaries maps each interceptable event to what it allows (§4.3,
// capabilities.schema per-boundary definitions).
var Boundaries = map[string]Boundary{
	"session.start":            {Effects: []string{"inject", "message"}},
	"config.change.before":     {Effects: []string{"deny", "message"}},
	"turn.start":               {Effects: []string{"deny", "modify", "inject", "flow", "message"}, Target: "prompt", FlowOps: []string{"stop"}},
	"turn.finish.before":       {Effects: []string{"modify", "flow", "message"}, Target: "response", FlowOps: []string{"stop", "continue"}},
	"model.request.before":     {Effects: []string{"deny", "modify", "inject", "return", "flow", "message"}, Target: "request", FlowOps: []string{"stop"}},
	"model.response.after":     {Effects: []string{"modify", "flow", "message"}, Target: "response", FlowOps: []string{"stop"}},
	"model.switch.before":      {Effects: []string{"deny", "flow", "message"}, FlowOps: []string{"stop"}},
	"tool.before":              {Effects: []string{"deny", "allow", "ask", "modify", "inject", "flow", "return", "message"}, Target: "input", FlowOps: []string{"stop"}},
	"tool.after":               {Effects: []string{"modify", "inject", "flow", "message"}, Target: "output", FlowOps: []string{"stop", "continue"}},
	"tool.permission.request":  {Effects: []string{"allow", "deny", "modify", "flow", "message"}, Target: "input", FlowOps: []string{"stop"}},
	"tool.batch.after":         {Effects: []string{"flow", "inject", "message"}, FlowOps: []string{"stop"}},
	"context.compact.before":   {Effects: []string{"deny", "modify", "return", "inject", "message"}, Target: "instructions"},
	"context.compact.after":    {Effects: []string{"inject", "modify", "message"}, Target: "summary"},
	"task.change.before":       {Effects: []string{"deny", "message"}},
	"user.elicitation.request": {Effects: []string{"deny", "return", "message"}},
	"user.elicitation.result":  {Effects: []string{"modify", "message"}, Target: "content"},
	"user.message.inbound":     {Effects: []string{"deny", "modify", "message"}, Target: "prompt"},
	"user.message.outbound":    {Effects: []string{"deny", "modify", "message"}, Target: "content"},
	"workspace.change.before":  {Effects: []string{"deny", "modify", "message"}, Target: "workspace"},
}
