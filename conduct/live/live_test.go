package live

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/conduct"
	"github.com/ahp-tap/ahp-tap/internal/syncwriter"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

const twoHooks = `{"protocolVersion":"draft","hooks":[
 {"id":"a","transport":{"type":"stdio","command":"a","lifecycle":"persistent"},"subscriptions":[
   {"events":["tool.before"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-closed","content":{"default":"body"}}]},
 {"id":"b","transport":{"type":"stdio","command":"b","lifecycle":"persistent"},"subscriptions":[
   {"events":["tool.before"],"mode":"intercept","timeoutMs":1000,"failurePolicy":"fail-closed","content":{"default":"body"}}]}]}`

func intercept(id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":%q,"source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"x","version":"1"},"call":{"id":"c1"},"tool":{"name":"bash","input":{"command":"ls"},"origin":"native"},"path":"native"},"capabilities":{"effects":["deny"]}}}`, id, id)
}

func answer(id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"protocolVersion":"draft","effects":[]}}`, id)
}

// A server fed by two clients over its socket, the link later in time
// sending first (its audit was quicker): the server orders the facts by
// time within its window, so serial dispatch a then b is no finding, and b
// before a (in time) is COND-1 although a's facts arrived first.
func TestServerOrdersLinks(t *testing.T) {
	for _, tc := range []struct {
		name        string
		aMs, bMs    float64 // when each link got the event
		wantFinding bool
	}{
		{"serial, b's facts arrive first", 0, 20, false},
		{"b first in time", 20, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, time.Minute, os.Stderr)
			dir, doc := ts.Dir, ts.doc
			t0 := time.Now() // within the window: the facts wait for each other
			feed := func(hook string, ms float64) {
				c := NewClient(ClientConfig{Dir: dir, Key: doc.Digest(), Hook: hook, Argv: []string{"/nonexistent"}})
				s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: doc, HookID: hook},
					Rules: rules.Set(rules.Options{}), Watch: c})
				at := func(d float64) time.Time { return t0.Add(time.Duration(d * float64(time.Millisecond))) }
				s.Frame(&tap.Frame{Dir: tap.FromHarness, Time: at(ms), Transport: tap.Stdio, Conn: hook, Raw: []byte(intercept("e1"))})
				s.Frame(&tap.Frame{Dir: tap.FromBackend, Time: at(ms + 10), Transport: tap.Stdio, Conn: hook, Raw: []byte(answer("e1"))})
				s.Close()
				c.Close(5 * time.Second)
			}
			// The link later in time sends first: only ordering by time
			// lets the timeline see which came first.
			if tc.bMs > tc.aMs {
				feed("b", tc.bMs)
				feed("a", tc.aMs)
			} else {
				feed("a", tc.aMs)
				feed("b", tc.bMs)
			}
			found := ts.wait(t)
			if got := len(found) > 0; got != tc.wantFinding {
				t.Fatalf("findings %v, want a finding: %v", found, tc.wantFinding)
			}
			if tc.wantFinding && !strings.HasPrefix(found[0].Rule, "COND-1") {
				t.Errorf("finding %s, want COND-1", found[0].Rule)
			}
			if _, err := os.Stat(PathsFor(dir).Sock); !os.IsNotExist(err) {
				t.Errorf("the socket is left after the server ended: %v", err)
			}
		})
	}
}

// A client whose queue overflows tells the server; its timeline then
// judges none of the events concerned: b before a, which is COND-1 when
// nothing was lost, is no finding, and the timeline says why.
func TestClientLossIsTold(t *testing.T) {
	for _, lose := range []bool{false, true} {
		ts := startServer(t, time.Minute, os.Stderr)
		dir, doc := ts.Dir, ts.doc
		t0 := time.Now()
		c := NewClient(ClientConfig{Dir: dir, Key: doc.Digest(), Hook: "b", Argv: []string{"/nonexistent"}})
		frame := func(s *tap.Session, hook string, ms float64, raw string, dir tap.Direction) {
			s.Frame(&tap.Frame{Dir: dir, Time: t0.Add(time.Duration(ms * float64(time.Millisecond))), Transport: tap.Stdio, Conn: hook, Raw: []byte(raw)})
		}
		sb := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: doc, HookID: "b"},
			Rules: rules.Set(rules.Options{}), Watch: c})
		if lose {
			c.mu.Lock()
			c.bytes = QueueBytes // full: the next fact is dropped
			c.mu.Unlock()
		}
		frame(sb, "b", 0, intercept("e0"), tap.FromHarness) // dropped when full
		c.mu.Lock()
		c.bytes = 0
		c.mu.Unlock()
		frame(sb, "b", 1, intercept("e1"), tap.FromHarness)
		frame(sb, "b", 10, answer("e1"), tap.FromBackend)
		sb.Close()
		c.Close(5 * time.Second)

		ca := NewClient(ClientConfig{Dir: dir, Key: doc.Digest(), Hook: "a", Argv: []string{"/nonexistent"}})
		sa := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: doc, HookID: "a"},
			Rules: rules.Set(rules.Options{}), Watch: ca})
		frame(sa, "a", 20, intercept("e1"), tap.FromHarness)
		frame(sa, "a", 30, answer("e1"), tap.FromBackend)
		sa.Close()
		ca.Close(5 * time.Second)
		n := len(ts.wait(t))
		nc := ts.Timeline.NotChecked()
		switch {
		case lose && (n != 0 || len(nc) == 0 || !strings.Contains(nc[0].Reason, "lost")):
			t.Errorf("facts lost: %d findings, not checked %v; want none and the loss said", n, nc)
		case !lose && n == 0:
			t.Errorf("nothing lost: no COND-1 for b before a")
		}
	}
}

// A link whose audit lags sends its facts after the window, though they
// are earlier in time than another link's: serial dispatch a (at 0 ms)
// then b (at 20 ms), b's facts first. A Clocked link a is waited for (its
// clock has not passed b's facts), so the timeline sees a then b: no
// finding. An unclocked a is not: b's facts are judged when the window
// passes, and a's come late, out of order — what a lagging audit did to
// live verdicts before links told their clock; the server counts them and
// says so.
func TestServerWaitsForALaggingLink(t *testing.T) {
	for _, clocked := range []bool{true, false} {
		t.Run(fmt.Sprintf("clocked=%v", clocked), func(t *testing.T) {
			var log strings.Builder
			ts := startServer(t, 20*time.Millisecond, syncwriter.New(&log)) // log read once the server ended
			srv, dir, doc := ts.Server, ts.Dir, ts.doc
			t0 := time.Now().Add(-time.Second) // the frames are past the window already
			at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
			// a's client is there first: clocked, it joins the server
			// before its first fact.
			ca := NewClient(ClientConfig{Dir: dir, Key: doc.Digest(), Hook: "a", Argv: []string{"/nonexistent"}, Clocked: clocked})
			if clocked {
				waitFor(t, "a joins", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.links == 1 })
			}
			sa := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: doc, HookID: "a"},
				Rules: rules.Set(rules.Options{}), Watch: ca})

			cb := NewClient(ClientConfig{Dir: dir, Key: doc.Digest(), Hook: "b", Argv: []string{"/nonexistent"}, Clocked: clocked})
			sb := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: doc, HookID: "b"},
				Rules: rules.Set(rules.Options{}), Watch: cb})
			sb.Frame(&tap.Frame{Dir: tap.FromHarness, Time: at(20), Transport: tap.Stdio, Conn: "b", Raw: []byte(intercept("e1"))})
			sb.Frame(&tap.Frame{Dir: tap.FromBackend, Time: at(30), Transport: tap.Stdio, Conn: "b", Raw: []byte(answer("e1"))})
			waitFor(t, "b's facts reach the server", func() bool {
				srv.mu.Lock()
				defer srv.mu.Unlock()
				return len(srv.buf) == 2 || srv.released.Equal(at(30))
			})
			if clocked {
				// Held for a, however long it lags (up to MaxWindow).
				time.Sleep(100 * time.Millisecond)
				srv.mu.Lock()
				held := len(srv.buf)
				srv.mu.Unlock()
				if held != 2 {
					t.Fatalf("b's facts were judged before a's clock passed them: %d of 2 still held", held)
				}
			} else {
				waitFor(t, "b's facts are judged", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.released.Equal(at(30)) })
			}
			sa.Frame(&tap.Frame{Dir: tap.FromHarness, Time: at(0), Transport: tap.Stdio, Conn: "a", Raw: []byte(intercept("e1"))})
			sa.Frame(&tap.Frame{Dir: tap.FromBackend, Time: at(10), Transport: tap.Stdio, Conn: "a", Raw: []byte(answer("e1"))})
			sa.Close()
			ca.Close(5 * time.Second)
			sb.Close()
			cb.Close(5 * time.Second)
			found := ts.wait(t)
			if clocked && (len(found) != 0 || srv.late != 0) {
				t.Errorf("a waited for: findings %v, %d late facts; want none", found, srv.late)
			}
			if !clocked && (srv.late != 2 || !strings.Contains(log.String(), "2 facts came after later facts")) {
				t.Errorf("a not waited for: %d late facts, said %q; want 2 late facts, said", srv.late, log.String())
			}
		})
	}
}

// The time before which facts go to the timeline: the window, held back
// by a clocked link that has not come as far, but never past MaxWindow.
func TestReleasable(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	s := &Server{Window: time.Second, MaxWindow: 10 * time.Second, clocks: map[*linkClock]bool{}}
	if got := s.releasable(now); !got.Equal(now.Add(-time.Second)) {
		t.Errorf("no link: %v, want the window", got)
	}
	lagging := &linkClock{through: now.Add(-3 * time.Second)}
	s.clocks[lagging] = true
	if got := s.releasable(now); !got.Equal(now.Add(-time.Second)) {
		t.Errorf("an unclocked link: %v, want the window", got)
	}
	lagging.clocked = true
	if got := s.releasable(now); !got.Equal(lagging.through) {
		t.Errorf("a clocked link 3s behind: %v, want its clock %v", got, lagging.through)
	}
	s.clocks[&linkClock{through: now, clocked: true}] = true
	if got := s.releasable(now); !got.Equal(lagging.through) {
		t.Errorf("a current link beside it: %v, want the lagging one's clock", got)
	}
	lagging.through = now.Add(-time.Minute)
	if got := s.releasable(now); !got.Equal(now.Add(-10 * time.Second)) {
		t.Errorf("a link a minute behind: %v, want MaxWindow", got)
	}
}

// The pid file is the server's "still running": it goes only after
// Finish (which writes the findings out, in the conduct server process),
// and Finish runs after the timeline gave its last finding. A pid file
// removed first let a reader of conduct.violations.log, waiting for it to
// go, read the log before its findings were written (a CI failure).
func TestPidFileOutlivesFinish(t *testing.T) {
	var ts *testServer
	var pidThere bool
	var foundThen int
	finished := make(chan struct{})
	ts = startServerFinishing(t, time.Millisecond, io.Discard, func() error {
		_, err := os.Stat(PathsFor(ts.Dir).Pid)
		pidThere = err == nil
		ts.fmu.Lock()
		foundThen = len(ts.found)
		ts.fmu.Unlock()
		close(finished)
		return errors.New("finish failed")
	})
	doc := ts.doc
	// b before a: COND-1, given when the timeline closes at the latest.
	t0 := time.Now()
	for i, hook := range []string{"b", "a"} {
		c := NewClient(ClientConfig{Dir: ts.Dir, Key: doc.Digest(), Hook: hook, Argv: []string{"/nonexistent"}})
		s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: doc, HookID: hook},
			Rules: rules.Set(rules.Options{}), Watch: c})
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		s.Frame(&tap.Frame{Dir: tap.FromHarness, Time: at, Transport: tap.Stdio, Conn: hook, Raw: []byte(intercept("e1"))})
		s.Frame(&tap.Frame{Dir: tap.FromBackend, Time: at.Add(10 * time.Millisecond), Transport: tap.Stdio, Conn: hook, Raw: []byte(answer("e1"))})
		s.Close()
		c.Close(5 * time.Second)
	}
	if err := <-ts.served; err == nil || err.Error() != "finish failed" {
		t.Errorf("Serve returned %v, want Finish's error", err)
	}
	<-finished
	if !pidThere {
		t.Error("the pid file was gone when Finish ran")
	}
	if foundThen == 0 {
		t.Error("Finish ran before the timeline's findings")
	}
	if _, err := os.Stat(PathsFor(ts.Dir).Pid); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there after Serve: %v", err)
	}
}

// testServer is a conduct server of twoHooks, serving until it is idle.
type testServer struct {
	*Server
	doc    *tap.Value
	served chan error
	fmu    sync.Mutex
	found  []tap.Finding
}

// startServer starts a server with window (MaxWindow a minute) in a
// short temporary directory: a socket path is at most 108 bytes.
func startServer(t *testing.T, window time.Duration, log io.Writer) *testServer {
	t.Helper()
	return startServerFinishing(t, window, log, nil)
}

// startServerFinishing is startServer with the server's Finish.
func startServerFinishing(t *testing.T, window time.Duration, log io.Writer, finish func() error) *testServer {
	t.Helper()
	dir, err := os.MkdirTemp("", "cl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	doc, _, _ := tap.ParseJSON([]byte(twoHooks))
	ts := &testServer{doc: doc, served: make(chan error, 1)}
	tl := conduct.New(conduct.Config{Registration: doc, Tapped: []string{"a", "b"},
		Sink: tap.SinkFunc(func(f tap.Finding) { ts.fmu.Lock(); ts.found = append(ts.found, f); ts.fmu.Unlock() })})
	ts.Server = &Server{Dir: dir, Key: doc.Digest(), Timeline: tl, Window: window, MaxWindow: time.Minute,
		Idle: 200 * time.Millisecond, Log: log, Finish: finish}
	r, w, _ := os.Pipe()
	go func() { ts.served <- ts.Serve(w) }()
	r.Read(make([]byte, 1))
	r.Close()
	return ts
}

// wait waits for the server to end and returns its findings.
func (ts *testServer) wait(t *testing.T) []tap.Finding {
	t.Helper()
	if err := <-ts.served; err != nil {
		t.Fatal(err)
	}
	ts.fmu.Lock()
	defer ts.fmu.Unlock()
	return slices.Clone(ts.found)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
	}
}
