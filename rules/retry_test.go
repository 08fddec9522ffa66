package rules

import (
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestRetry(t *testing.T) {
	ev := convEvent("e1", "tool.before", "")
	req := func(ms int) *tap.Frame { return atMs(harnessFrame(convIntercept("e1", ev, denyCaps)), ms) }
	tests := []struct {
		name   string
		frames []*tap.Frame
		want   int
	}{
		{"single delivery", []*tap.Frame{req(0), atMs(backendFrame(convResult("e1", `[]`)), 10)}, 0},
		{"identical retry in time", []*tap.Frame{req(0), req(400), atMs(backendFrame(convResult("e1", `[]`)), 450)}, 0},
		{"retry after an error answer", []*tap.Frame{req(0), atMs(backendFrame(convError("e1", -32003)), 10), req(20)}, 0},
		{"retry past the deadline", []*tap.Frame{req(0), req(600)}, 1},
		{"retry after deny", []*tap.Frame{req(0), atMs(backendFrame(convResult("e1", `[{"type":"deny","reason":"r"}]`)), 10), req(20)}, 1},
		{"retry after no effect", []*tap.Frame{req(0), atMs(backendFrame(convResult("e1", `[]`)), 10), req(20)}, 1},
		{"changed content", []*tap.Frame{req(0), atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", `,"path":"x"`), denyCaps)), 20)}, 1},
		{"changed session id", []*tap.Frame{req(0), atMs(harnessFrame(convIntercept("e1", `{"id":"e1","source":"https://harness.example/runtime/42","type":"tool.before","time":"2026-08-24T08:51:14Z","harness":{"name":"h","version":"1"},"session":{"id":"s2"},"call":{"id":"c1"}}`, denyCaps)), 20)}, 1},
		{"changed JSON-RPC id", []*tap.Frame{req(0), atMs(harnessFrame(convIntercept("r2", ev, denyCaps)), 20)}, 1},
		{"two events share (source, id)", []*tap.Frame{req(0), atMs(harnessFrame(convObserve(convEvent("e1", "turn.end", ""))), 20)}, 1},
		{"other source is another event", []*tap.Frame{req(0), atMs(harnessFrame(convIntercept("e1", `{"id":"e1","source":"urn:other","type":"turn.start","time":"2026-08-24T08:51:14Z"}`, denyCaps)), 20)}, 0},
		{"observe and intercept of one event", []*tap.Frame{harnessFrame(convObserve(ev)), req(0), atMs(backendFrame(convResult("e1", `[]`)), 10)}, 0},
		{"observation re-sent identically", []*tap.Frame{harnessFrame(convObserve(ev)), harnessFrame(convObserve(ev))}, 0},
		{"observation re-sent changed", []*tap.Frame{harnessFrame(convObserve(ev)), harnessFrame(convObserve(convEvent("e1", "tool.before", `,"path":"x"`)))}, 1},
		// Content is what is compared, not bytes: member order, escaping
		// and space may differ; a number written otherwise, or a duplicate
		// key whose last value differs, is other content.
		{"same content, other order, escapes and space", []*tap.Frame{req(0), atMs(harnessFrame(convIntercept("e1", ` { "call":{"id":"c1"}, "session":{"id":"s1"},"harness":{"version":"1","name":"h"},"time":"2026-08-24T08:51:14Z","type":"tool.\u0062efore","source":"https://harness.example/runtime/42","id":"e1" }`, denyCaps)), 400)}, 0},
		{"number written otherwise", []*tap.Frame{atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", `,"n":1`), denyCaps)), 0), atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", `,"n":1.0`), denyCaps)), 20)}, 1},
		{"duplicate key, same last value", []*tap.Frame{atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", `,"n":2`), denyCaps)), 0), atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", `,"n":1,"n":2`), denyCaps)), 20)}, 0},
		{"duplicate key, other last value", []*tap.Frame{atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", `,"n":1`), denyCaps)), 0), atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", `,"n":1,"n":2`), denyCaps)), 20)}, 1},
	}
	// The conversation's own MemoryStore takes digests as bytes and sets
	// outcomes in place; any other store gets the hex Digest through Load
	// and Store. Both must judge alike.
	stores := map[string]func() tap.EventStore{
		"memory":      func() tap.EventStore { return nil },
		"other store": func() tap.EventStore { return opaqueStore{&tap.MemoryStore{}} },
	}
	for _, tt := range tests {
		for name, store := range stores {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				rs := append(retryRules(), correlationRules()...)
				var frames []*tap.Frame // fresh frames: Feed numbers and decodes them
				for _, f := range tt.frames {
					frames = append(frames, &tap.Frame{Dir: f.Dir, Transport: f.Transport, Time: f.Time, Raw: f.Raw})
				}
				fs := runRules(tap.Config{Timeout: 500 * time.Millisecond, Events: store()}, rs, frames...)
				wantFindings(t, fs, "BASE-6", tt.want)
			})
		}
	}
}

// opaqueStore hides the MemoryStore behind it, so the conversation uses
// only the EventStore interface, as with stdio's DirStore.
type opaqueStore struct{ tap.EventStore }

// A per_event harness starts one backend, and one tap, per event; the taps
// share an EventStore and must still see a retry after an empty answer.
func TestRetryAcrossProcesses(t *testing.T) {
	store := &tap.MemoryStore{}
	rs := append(retryRules(), correlationRules()...)
	ev := convEvent("e1", "tool.before", "")
	cfg := tap.Config{Events: store, Lifecycle: "per_event", Timeout: time.Second}
	first := runRules(cfg, rs,
		atMs(harnessFrame(convIntercept("e1", ev, denyCaps)), 0),
		atMs(backendFrame(convResult("e1", `[]`)), 10))
	wantFindings(t, first, "BASE-6", 0)
	second := runRules(cfg, rs, atMs(harnessFrame(convIntercept("e1", ev, denyCaps)), 50))
	wantFindings(t, second, "BASE-6", 1)
}

// Two intercept subscriptions of one backend covering the event deliver it
// twice: legitimate, not a retry (§7).
func TestRetryTwoSubscriptions(t *testing.T) {
	reg, _, err := tap.ParseJSON([]byte(`{"protocolVersion":"draft","hooks":[{"id":"com.example.p","transport":{"type":"http","url":"https://p.example/h"},
		"subscriptions":[
			{"events":["tool.before"],"mode":"intercept","timeoutMs":500,"failurePolicy":"fail-open","content":{"default":"omit"}},
			{"events":["tool.*"],"mode":"intercept","timeoutMs":500,"failurePolicy":"fail-closed","content":{"default":"body"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := convEvent("e1", "tool.before", "")
	rs := append(retryRules(), correlationRules()...)
	fs := runRules(tap.Config{Registration: reg, HookID: "com.example.p"}, rs,
		atMs(harnessFrame(convIntercept("e1", ev, denyCaps)), 0),
		atMs(backendFrame(convResult("e1", `[]`)), 10),
		atMs(harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", `,"path":"effective"`), denyCaps)), 20),
		atMs(backendFrame(convResult("e1", `[]`)), 30))
	wantFindings(t, fs, "BASE-6", 0)
}
