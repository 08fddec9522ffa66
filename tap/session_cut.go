package tap

import "fmt"

// Cut says the recording of this link stops after frame last (nil: before
// any frame) without the end record its writer promised: the process that
// wrote it was killed. What was on the wire after the cut is unknown, so
// a request still pending here may well have been answered (or abandoned
// at its deadline) after it: from the cut on every conversation of the
// session is an excerpt (no CORR-2 "never answered", no end-of-stream
// verdicts), and one TAP-1 warning names the last frame recorded. Cut is
// for replays; call it before Close.
func (s *Session) Cut(last *Frame, line int) {
	if s.closed {
		return
	}
	pending := 0
	for _, e := range s.order {
		c := e.Conversation()
		if !c.Partial {
			pending += len(c.Pending())
		}
		c.Partial = true
	}
	s.partial = true
	where := "before its first frame"
	if last != nil {
		where = fmt.Sprintf("after frame #%d (%s", last.Seq, last.Dir)
		if line > 0 {
			where += fmt.Sprintf(", capture line %d", line)
		}
		where += ")"
	}
	msg := fmt.Sprintf("the capture is cut off %s: it has no end record, so the process that wrote it was killed; what crossed the wire after that is unknown", where)
	if pending > 0 {
		msg += fmt.Sprintf(", and the %d request(s) pending at the cut are not judged (they may have been answered or abandoned after it)", pending)
	}
	fd := TapIncomplete.At(last, Warn, "", "%s", msg)
	s.sink.Write(fd)
}
