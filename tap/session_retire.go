package tap

import "time"

// A per_event link is one backend process per event: a shared audit
// process, or the replay of what it recorded, sees a new connection for
// every event, each of which ends when its process exits. Each was kept
// whole until the session closed, about 14 KB a connection for ever
// (issue 28 item 9: 200,000 connections took 4.2 GB). Once a per_event
// connection's process has exited, nothing more comes on it: its streams
// are ended, its end-of-stream checks run, its exchange records are kept
// (the most recent retiredKeep of them) and the rest is let go.

// retiredKeep bounds the exchange records kept of retired connections.
const retiredKeep = 8 * DefaultKeepAnswered

// retiredRemember is how many retired connection names a session keeps,
// so that a note arriving late for one (a stream's end after the exit) is
// not taken for a new connection.
const retiredRemember = 4096

// retire ends connection conn of a per_event stdio session after its
// process exited at t.
func (s *Session) retire(conn string, t time.Time) {
	e, ok := s.engines[conn]
	if !ok || s.fixed != nil || s.cfg.Transport != Stdio || s.cfg.Lifecycle != LifecyclePerEvent {
		return
	}
	// A last line without "\n" still in the framer is checked now, as
	// Close would.
	for _, d := range []Direction{FromHarness, FromBackend, 0} {
		s.framer.End(conn, d, t)
	}
	s.write(e.Finish())
	c := e.Conversation()
	s.retiredRecs = append(s.retiredRecs, c.Records()...)
	if over := len(s.retiredRecs) - retiredKeep; over > retiredKeep/4 {
		s.retiredForgotten += over
		s.retiredRecs = append(s.retiredRecs[:0:0], s.retiredRecs[over:]...)
	}
	s.retiredForgotten += c.Forgotten()
	delete(s.engines, conn)
	for i, o := range s.order {
		if o == e {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	if s.retired == nil {
		s.retired = map[string]bool{}
	}
	s.retired[conn] = true
	s.retiredFIFO = append(s.retiredFIFO, conn)
	if len(s.retiredFIFO) > retiredRemember {
		delete(s.retired, s.retiredFIFO[0])
		s.retiredFIFO = append(s.retiredFIFO[:0:0], s.retiredFIFO[1:]...)
	}
}
