//go:build unix

package httpproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/rs/zerolog"
)

// TestRelayIdleConnectionParks holds a keep-alive harness connection idle
// past relayParkAfter (issue 27 item 4): the relay must give its read
// buffers back and wait without them (Proxy.parked counts it), then serve
// the next request on the same connection, and the one after at once, on
// the same upstream connection, with both exchanges audited. A relay that
// never parks fails the wait; one that loses bytes or the upstream
// connection while parked fails the exchanges.
func TestRelayIdleConnectionParks(t *testing.T) {
	var mu sync.Mutex
	upConns := map[string]int{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		upConns[r.RemoteAddr]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		id := strings.TrimSuffix(strings.TrimPrefix(string(b), `{"jsonrpc":"2.0","id":"`), `","method":"hooks/observe","params":{}}`)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%q,"result":{}}`, id)
	}))
	defer up.Close()
	found := &findings{}
	aud := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.HTTP}, Rules: rules.Set(rules.Options{}),
		Sink: found}).Audit(tap.AuditorConfig{})
	p, err := New(Config{Upstream: mustURL(t, up.URL), Auditor: aud, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	base, shutdown := serveProxy(t, p, "127.0.0.1:0")
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	exchange := func(id string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/observe","params":{}}`
		fmt.Fprintf(c, "POST /agent-hooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(got), `"`+id+`"`) {
			t.Fatalf("%s: status %d, body %s", id, resp.StatusCode, got)
		}
	}
	exchange("first")
	// Not a timed assertion: the wait ends as soon as the connection parks,
	// and only a relay that never parks reaches the bound.
	for deadline := time.Now().Add(30 * time.Second); p.parked.Load() != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the idle connection did not park (parked = %d)", p.parked.Load())
		}
	}
	exchange("second")
	if n := p.parked.Load(); n != 0 {
		t.Errorf("parked = %d after a request came, want 0", n)
	}
	exchange("third")
	c.Close()
	if err := shutdown(); err != nil {
		t.Fatal(err)
	}
	aud.Close()
	p.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(upConns) != 1 {
		t.Errorf("upstream connections = %v, want the one kept across the park", upConns)
	}
	if d := aud.Dropped(); d != 0 {
		t.Errorf("frames dropped = %d", d)
	}
	if out := found.dump(); strings.Contains(out, "TAP-") || strings.Contains(out, "CORR-") {
		t.Errorf("findings on conforming traffic across a park: %s", out)
	}
}
