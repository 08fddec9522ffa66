package live

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/conduct"
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
			dir, err := os.MkdirTemp("", "cl") // short: a socket path is at most 108 bytes
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			doc, _, _ := tap.ParseJSON([]byte(twoHooks))
			var mu sync.Mutex
			var found []tap.Finding
			tl := conduct.New(conduct.Config{Registration: doc, Tapped: []string{"a", "b"},
				Sink: tap.SinkFunc(func(f tap.Finding) { mu.Lock(); found = append(found, f); mu.Unlock() })})
			srv := &Server{Dir: dir, Key: doc.Digest(), Timeline: tl, Window: time.Minute, Idle: 200 * time.Millisecond, Log: os.Stderr}
			r, w, _ := os.Pipe()
			served := make(chan error, 1)
			go func() { served <- srv.Serve(w) }()
			r.Read(make([]byte, 1))
			r.Close()

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
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
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
		dir, err := os.MkdirTemp("", "cl")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		doc, _, _ := tap.ParseJSON([]byte(twoHooks))
		var mu sync.Mutex
		var found []tap.Finding
		tl := conduct.New(conduct.Config{Registration: doc, Tapped: []string{"a", "b"},
			Sink: tap.SinkFunc(func(f tap.Finding) { mu.Lock(); found = append(found, f); mu.Unlock() })})
		srv := &Server{Dir: dir, Key: doc.Digest(), Timeline: tl, Window: time.Minute, Idle: 200 * time.Millisecond, Log: os.Stderr}
		r, w, _ := os.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(w) }()
		r.Read(make([]byte, 1))
		r.Close()

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
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		n := len(found)
		mu.Unlock()
		nc := tl.NotChecked()
		switch {
		case lose && (n != 0 || len(nc) == 0 || !strings.Contains(nc[0].Reason, "lost")):
			t.Errorf("facts lost: %d findings, not checked %v; want none and the loss said", n, nc)
		case !lose && n == 0:
			t.Errorf("nothing lost: no COND-1 for b before a")
		}
	}
}
