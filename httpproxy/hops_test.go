package httpproxy

import (
	"strings"
	"testing"
)

func parsedRequest(t testing.TB, raw string) *head { return parsedHead(t, raw, true) }

// parsedHead parses raw as the relay reads a request head (request) or a
// response head.
func parsedHead(t testing.TB, raw string, request bool) *head {
	t.Helper()
	h := &head{}
	if err := h.parse([]byte(raw), request); err != nil {
		t.Fatal(err)
	}
	line := h.parseStatusLine
	if request {
		line = h.parseRequestLine
	}
	if err := line(); err != nil {
		t.Fatal(err)
	}
	if err := h.interpret(request); err != nil {
		t.Fatal(err)
	}
	return h
}

// Only a request that may be looping is marked: the first of identical
// requests goes as it came; an identical one while it is in flight, or
// one already marked by another tap, carries the hop field; this tap's own
// id or MaxHops ids in it is a loop.
func TestHops(t *testing.T) {
	hp := newHops()
	req := "POST /h HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n"
	first := hp.check(parsedRequest(t, req), []byte("{}"))
	if first.loop || first.field != nil {
		t.Fatalf("a first request: %+v, want it forwarded as it came", first)
	}
	// The same body to another host (a tap rewrote Host) while in flight.
	again := hp.check(parsedRequest(t, strings.Replace(req, "Host: a", "Host: b", 1)), []byte("{}"))
	if again.loop || string(again.field) != hp.id {
		t.Errorf("an identical request in flight: %+v, want the field %q", again, hp.id)
	}
	other := hp.check(parsedRequest(t, req), []byte("[]"))
	if other.field != nil {
		t.Errorf("a request of the same size with another body is marked: %q", other.field)
	}
	hp.release(again)
	hp.release(other)
	hp.release(first)
	if n := len(hp.live); n != 0 {
		t.Errorf("%d fingerprints left after release", n)
	}
	if c := hp.check(parsedRequest(t, req), []byte("{}")); c.field != nil {
		t.Errorf("after release, the request is marked: %q", c.field)
	}

	marked := "POST /h HTTP/1.1\r\nHost: a\r\n" + HopField + ": tabc\r\nContent-Length: 2\r\n\r\n"
	c := hp.check(parsedRequest(t, marked), []byte("{}"))
	if c.loop || string(c.field) != "tabc, "+hp.id {
		t.Errorf("a request marked by another tap: %+v, want %q", c, "tabc, "+hp.id)
	}
	out := withHopField([]byte("POST /h HTTP/1.1\r\nHost: a\r\n\r\n"), c.field)
	if want := "POST /h HTTP/1.1\r\nHost: a\r\n" + HopField + ": tabc, " + hp.id + "\r\n\r\n"; string(out) != want {
		t.Errorf("forwarded head %q, want %q", out, want)
	}
	own := strings.Replace(marked, "tabc", "tabc, "+hp.id, 1)
	if c := hp.check(parsedRequest(t, own), nil); !c.loop {
		t.Errorf("a request carrying this tap's id is not a loop")
	}
	long := strings.Replace(marked, "tabc", "t1,t2,t3,t4,t5,t6,t7,t8", 1)
	if c := hp.check(parsedRequest(t, long), nil); !c.loop {
		t.Errorf("a request through %d taps is not a loop", MaxHops)
	}
}
