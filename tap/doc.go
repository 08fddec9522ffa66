// Package tap is the audit core of ahp-tap: it turns what crossed an AHP
// link into findings, the same way whichever way the traffic came in.
//
// A frame flows like this (docs/architecture.md has the picture):
//
//   - A transport (package stdio, package httpproxy) forwards bytes
//     unchanged and hands a copy to an [Auditor], which never blocks it: a
//     full queue drops the copy and counts it.
//   - The Auditor feeds a [Session]: one link checked with one
//     configuration. `check` and `replay` (and later HAR files, mock
//     peers, an out-of-process audit) feed a Session directly with
//     [Session.Frame], [Session.Stream] and [Session.Note]. The Session
//     cuts streams into frames ([Framer]), records every frame and note
//     ([Recorder], a capture), reports the registration's own findings
//     once, keeps frames not audited as [NoteDropped] notes (so a replay
//     agrees with the live run), and lists what its configuration cannot
//     check ([Session.NotChecked]).
//   - Each connection's [Engine] decodes a [Frame] once into a [Value] tree
//     and a JSON-RPC [Message], correlates it in a [Conversation]
//     (requests and their responses as an [Exchange], events remembered in
//     an [EventStore] for retries), runs the declared per-frame analyses
//     ([Analysis]) once, then every [Rule]; a rule's [Finding] goes to the
//     session's [Sink].
//
// The rules themselves live in package rules; tap knows them only as
// [Rule] values and a [RuleSet]. A Finding names one catalogue check
// (docs/CHECKS.md); the checks TAP-1 (not every frame audited) and TAP-2
// (an internal error of a rule or analysis) are tap's own.
//
// Two things are called an exchange in ahp-tap: [Exchange] here is one
// JSON-RPC request and its response in a Conversation; httpproxy's
// unexported exchange is one HTTP request/response pair on its way to the
// auditor, which becomes one or two Frames.
package tap
