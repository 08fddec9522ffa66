package main

import (
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// newSession builds the tap.Session of one link the way every command
// does: sc (the flags' configuration with the transport's settings, its
// way out usually from output.Output.SessionConfig) checked by ahp-tap's
// rules and, with --spec, the upstream schema. The session reports the
// registration's own findings to its sink when it is made.
func (l *loaded) newSession(sc tap.SessionConfig) *tap.Session {
	sc.Rules = rules.Set(l.opt)
	return tap.NewSession(sc)
}

// registrationFindings judges the --registration document on its own:
// ahp-tap's checks and, with --spec, the upstream schema. check and replay
// list them under the registration's file name.
func (l *loaded) registrationFindings() []tap.Finding {
	return rules.Set(l.opt).Registration(l.cfg.Registration, l.cfg.Resolved().Snapshot)
}
