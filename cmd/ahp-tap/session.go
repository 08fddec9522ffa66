package main

import (
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// sessionWatched builds the tap.Session of one live link the way every
// command does: cfg (the flags' configuration with the transport's
// settings) checked by ahp-tap's rules and, with --spec, the upstream
// schema, watched by w (nil: none; the live conduct client, the live
// view). The session reports the registration's own findings to sink
// when it is made.
func (l *loaded) sessionWatched(cfg tap.Config, sink tap.Sink, rec tap.Recorder, conn string, maxLine int, w tap.Watcher) *tap.Session {
	return tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(l.opt), Sink: sink, Recorder: rec, Conn: conn, MaxLine: maxLine, Watch: w})
}

// registrationFindings judges the --registration document on its own:
// ahp-tap's checks and, with --spec, the upstream schema. check and replay
// list them under the registration's file name.
func (l *loaded) registrationFindings() []tap.Finding {
	return rules.Set(l.opt).Registration(l.cfg.Registration, l.cfg.Resolved().Snapshot)
}

// notPossible turns a session's NotChecked list into the summary's.
func notPossible(nc []tap.NotChecked) []report.NotPossible {
	var out []report.NotPossible
	for _, n := range nc {
		out = append(out, report.NotPossible{Check: n.Check, Reason: n.Reason})
	}
	return out
}
