package httpproxy

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/ahp-tap/ahp-tap/tap"
)

// heldRule holds the audit on its first frame until gate closes, so that
// nothing leaves the audit queue while the test sends; it counts the
// frames it sees whole and truncated.
type heldRule struct {
	gate            chan struct{}
	whole, truncted *atomic.Int64
}

func (r heldRule) Info() tap.RuleInfo {
	return tap.RuleInfo{ID: "TEST/held", Check: "TEST", Level: tap.Info, Summary: "test"}
}

func (r heldRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	<-r.gate
	if f.Truncated {
		r.truncted.Add(1)
	} else {
		r.whole.Add(1)
	}
	return nil
}

// TestAuditCopiesInFlightShareTheBudget: with the audit held, 24
// concurrent 300 KiB bodies (Content-Length and chunked) through a tap with
// a 1 MiB budget. The copies of bodies in flight reserve budget as they
// grow, so the bytes charged never pass the budget; the copies that find
// no room are cut to a prefix and counted; every body is forwarded whole
// and unchanged; and when the audit has taken everything, every reserved
// byte has been given back (issue 10 item 2).
func TestAuditCopiesInFlightShareTheBudget(t *testing.T) {
	const (
		budget  = 1 << 20
		clients = 24
		size    = 300 << 10
	)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Got", fmt.Sprintf("%d %x", len(b), sha256.Sum256(b)))
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{}}`)
	}))
	defer up.Close()

	gate := make(chan struct{})
	var whole, truncated atomic.Int64
	found := &findings{}
	aud := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.HTTP}, Rules: ruleList{heldRule{gate, &whole, &truncated}},
		Sink: found}).Audit(tap.AuditorConfig{Budget: budget})
	p, err := New(Config{Upstream: mustURL(t, up.URL), MaxAuditBody: budget / 2, Auditor: aud,
		Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	base, shutdown := serveProxy(t, p, "127.0.0.1:0")

	c := client()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := bytes.Repeat([]byte{byte('a' + i%26)}, size)
			copy(body, fmt.Sprintf(`{"jsonrpc":"2.0","id":"r%d","method":"hooks/intercept","params":{"pad":"`, i))
			var r io.Reader = bytes.NewReader(body)
			if i%2 == 1 {
				r = struct{ io.Reader }{r} // no length: chunked
			}
			req, _ := http.NewRequest("POST", base+"/agent-hooks", r)
			req.Header = jsonHeader()
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got, want := resp.Header.Get("X-Got"), fmt.Sprintf("%d %x", size, sha256.Sum256(body)); got != want {
				t.Errorf("client %d: upstream got %q, want %q", i, got, want)
			}
		}()
	}
	wg.Wait()
	if _, peak := aud.Queued(); peak > budget {
		t.Errorf("peak bytes charged %d, above the budget %d", peak, budget)
	}
	cuts := aud.Cuts()
	if cuts == 0 {
		t.Errorf("no copy was cut: %d bodies of %d bytes held with a %d-byte budget and the audit stopped", clients, size, budget)
	}
	if err := shutdown(); err != nil {
		t.Errorf("Serve = %v", err)
	}
	close(gate)
	aud.Close()
	p.Close()
	if now, _ := aud.Queued(); now != 0 {
		t.Errorf("%d bytes still charged after the audit took everything: a reservation leaked", now)
	}
	// Every frame is accounted for: audited whole, audited as a prefix
	// (cut: TAP-1), or dropped (TAP-1).
	if got := whole.Load() + truncated.Load() + int64(aud.Dropped()); got != 2*clients {
		t.Errorf("%d audited whole + %d truncated + %d dropped = %d, want %d frames", whole.Load(), truncated.Load(), aud.Dropped(), got, 2*clients)
	}
	if truncated.Load() > int64(cuts) {
		t.Errorf("%d frames audited truncated, more than the %d cut copies", truncated.Load(), cuts)
	}
	if len(found.withCheck("TAP-1")) == 0 && truncated.Load()+int64(aud.Dropped()) > 0 {
		t.Errorf("frames not audited whole but no TAP-1:%s", found.dump())
	}
	t.Logf("budget %d: %d whole, %d truncated (%d cuts), %d dropped", budget, whole.Load(), truncated.Load(), cuts, aud.Dropped())
}

// TestCompleteAuditCopiesAreNeverCut: under --audit complete the copies of
// bodies in flight reserve nothing and are never cut; forwarding waits for
// room at the queue instead, and every body is audited whole (the
// documented trade: copies in flight are bounded by --max-audit-body each,
// not by the budget).
func TestCompleteAuditCopiesAreNeverCut(t *testing.T) {
	const (
		budget  = 1 << 20
		clients = 12
		size    = 300 << 10
	)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{}}`)
	}))
	defer up.Close()
	gate := make(chan struct{})
	close(gate) // the audit runs freely
	var whole, truncated atomic.Int64
	aud := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.HTTP}, Rules: ruleList{heldRule{gate, &whole, &truncated}},
		Sink: &findings{}}).Audit(tap.AuditorConfig{Budget: budget, Complete: true})
	p, err := New(Config{Upstream: mustURL(t, up.URL), MaxAuditBody: budget / 2, Auditor: aud, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	base, shutdown := serveProxy(t, p, "127.0.0.1:0")
	c := client()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := bytes.Repeat([]byte{'x'}, size)
			copy(body, fmt.Sprintf(`{"jsonrpc":"2.0","id":"r%d","method":"hooks/intercept","params":{"pad":"`, i))
			resp, err := c.Post(base+"/agent-hooks", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if err := shutdown(); err != nil {
		t.Errorf("Serve = %v", err)
	}
	aud.Close()
	p.Close()
	if aud.Cuts() != 0 || aud.Dropped() != 0 || truncated.Load() != 0 || whole.Load() != 2*clients {
		t.Errorf("complete: %d cuts, %d dropped, %d truncated, %d whole; want every one of %d frames whole", aud.Cuts(), aud.Dropped(), truncated.Load(), whole.Load(), 2*clients)
	}
	if now, peak := aud.Queued(); now != 0 || peak > budget {
		t.Errorf("Queued() = %d (peak %d), want 0 after Close and the peak within %d", now, peak, budget)
	}
}

// ruleList is a RuleSet of the given rules (the same instances for every
// engine) that judges no registration.
type ruleList []tap.Rule

func (r ruleList) Rules() []tap.Rule                             { return r }
func (r ruleList) Registration(*tap.Value, string) []tap.Finding { return nil }
