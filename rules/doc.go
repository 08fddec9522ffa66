// Package rules holds ahp-tap's checks of the Agent Hooks Protocol: one
// family of [tap.Rule] values per file, each rule reporting under exactly
// one catalogue check ([Catalogue], docs/CHECKS.md), and [Default], the
// list a [tap.Session] runs on every frame ([Set] wraps it, with the
// registration's own findings, as a [tap.RuleSet]).
//
// How a frame is judged: package tap decodes and correlates it, then runs
// the analyses the rules declare (tap.Analysis: the shape walk, the edit
// evaluation, the outcome of an exchange, --spec validation, answers to
// notifications), each once per frame, then every rule in Default's order;
// no rule depends on another or on that order. A rule reads the frame, the
// conversation (its exchange, correlation, earlier sightings of the event,
// the registration) and the analyses it declared, and returns findings.
//
// The protocol's vocabulary (methods, the 32 event types and which are
// interceptable, effects, modify targets, what each boundary allows) lives
// in vocabulary.go; a test checks it against the upstream schemas.
//
// Adding a check is one file and one line in Default: see
// docs/architecture.md, "How to add a check".
package rules
