package report

import (
	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Replay replays a capture into the run, the way `ahp-tap replay` does:
// one session per segment (capture.Replay), built from the SessionConfig
// open returns for the segment's header (capture.Header.Config gives the
// live run's settings), with the event store the live run had (segments
// that shared a --state directory share one; capture.Stores), its frames
// and findings fed to the run with their capture lines, and its exchange
// records and coverage handed over when the segment ends (Closed), before
// closed (may be nil) sees the session.
func (r *Run) Replay(cr *capture.Reader, open func(h *capture.Header) (tap.SessionConfig, error), closed func(*tap.Session)) error {
	stores := capture.NewStores()
	return capture.Replay(cr, func(h *capture.Header) (*tap.Session, error) {
		sc, err := open(h)
		if err != nil {
			return nil, err
		}
		r.Injected(h.Injected)
		sc.Events = stores.For(h)
		sc.SharedEvents = h.State != ""
		return tap.NewSession(r.SessionConfig(sc, cr.Line)), nil
	}, func(s *tap.Session) {
		s.Close()
		r.Closed(s)
		if closed != nil {
			closed(s)
		}
	})
}
