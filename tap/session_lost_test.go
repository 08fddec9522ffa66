package tap

import (
	"testing"
	"time"
)

// StreamLost makes the session's own framer resynchronise a stream whose
// bytes were lost: the rest of the line the loss cut is not a frame (it
// is counted as not audited, and the conversation becomes an excerpt),
// the next whole line is, and the other direction is untouched.
func TestSessionStreamLostResynchronises(t *testing.T) {
	rec := &memRecorder{}
	var findings []Finding
	s := NewSession(SessionConfig{Config: Config{Transport: Stdio}, Recorder: rec, Conn: "stdio:1",
		Sink: SinkFunc(func(f Finding) { findings = append(findings, f) })})
	t0 := time.Unix(1700000000, 0)
	s.Stream("stdio:1", FromBackend, t0, []byte(`{"jsonrpc":"2.0","id":"a","res`))
	s.Stream("stdio:1", FromHarness, t0, []byte(`{"jsonrpc":"2.0","method":"x"`))
	s.StreamLost("stdio:1", FromBackend) // the bytes between were dropped
	s.Stream("stdio:1", FromBackend, t0, []byte("ult\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"result\":{}}\n"))
	s.Stream("stdio:1", FromHarness, t0, []byte("}\n"))
	s.Close()
	var frames []string
	for _, it := range rec.items {
		if it.Frame != nil {
			frames = append(frames, it.Frame.Dir.String()+" "+string(it.Frame.Raw))
		}
	}
	want := []string{`harness {"jsonrpc":"2.0","method":"x"}`, `backend {"jsonrpc":"2.0","id":"b","result":{}}`}
	if len(frames) != 2 || frames[0] != want[0] && frames[1] != want[0] || frames[0] != want[1] && frames[1] != want[1] {
		t.Errorf("frames %q, want %q (the line the loss cut is no frame)", frames, want)
	}
	if n := s.NotAudited(); n != 1 {
		t.Errorf("NotAudited = %d, want 1 (the cut line)", n)
	}
	tap1 := 0
	for _, f := range findings {
		if f.Check == "TAP-1" {
			tap1++
		}
	}
	if tap1 != 1 {
		t.Errorf("%d TAP-1 findings, want 1: %+v", tap1, findings)
	}
}
