package tap_test

import (
	"fmt"
	"time"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A source of whole messages (a HAR file, a mock peer, an audit worker
// reading a pipe) feeds a Session frame by frame; the session numbers
// them, correlates requests and responses, and writes findings to its sink.
func ExampleSession() {
	s := tap.NewSession(tap.SessionConfig{
		Config: tap.Config{Transport: tap.HTTP, Timeout: time.Second},
		Rules:  rules.Set(rules.Options{}),
		Sink:   tap.SinkFunc(func(f tap.Finding) { fmt.Println(f) }),
	})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Frame(&tap.Frame{Dir: tap.FromHarness, Time: t0, Transport: tap.HTTP, Conn: "http/1",
		Raw:  []byte(`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"},"session":{"id":"s1"},"tool":{"name":"Bash","kind":"shell","origin":"native","input":{"command":"ls"}},"call":{"id":"c1"},"path":"native"},"capabilities":{"effects":["deny"]}}}`),
		HTTP: &tap.HTTPMeta{Method: "POST", Header: map[string][]string{"Content-Type": {"application/json"}}}})
	s.Frame(&tap.Frame{Dir: tap.FromBackend, Time: t0.Add(2 * time.Second), Transport: tap.HTTP, Conn: "http/1",
		Raw:  []byte(`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`),
		HTTP: &tap.HTTPMeta{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}}})
	s.Close()
	for _, r := range s.Records() {
		fmt.Println(r.RPCID, r.Outcome, r.LatencyMs)
	}
	// Output:
	// #2 sent by backend: warn  CORR-3: hooks/intercept "e1" was answered 2s after the request, past its 1s deadline: the backend SHOULD answer within the deadline; AHP-FAIL-002 binds the harness to stop waiting at the deadline, ignore any later answer and apply its failure policy
	// "e1" late 2000
}
