package viewserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/internal/browser"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// feed replays the report package's CI capture through sessions whose
// findings, judged frames and notes go to h, as a tap's would.
func feed(t *testing.T, h *Hub) {
	t.Helper()
	f, err := os.Open("../../report/testdata/ci.capture.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = capture.Replay(capture.NewReader(f), func(hd *capture.Header) (*tap.Session, error) {
		cfg, err := hd.Config(tap.Config{}, capture.Overrides{})
		return tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(rules.Options{}), Sink: h, Watch: h, Recorder: noteRecorder{h}}), err
	}, func(s *tap.Session) { s.Close() })
	if err != nil {
		t.Fatal(err)
	}
}

type noteRecorder struct{ h *Hub }

func (noteRecorder) Record(*tap.Frame)       {}
func (r noteRecorder) RecordNote(n tap.Note) { r.h.Note(n) }

func serveHub(t *testing.T, h *Hub) string {
	t.Helper()
	var page bytes.Buffer
	if err := report.LivePage(&page, report.Header{Tool: "ahp-tap", Version: "test", Snapshot: "draft", Catalogue: rules.Catalogue}, "ahp-tap stdio · live"); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	srv := Server(h.Handler(page.Bytes(), false))
	go srv.Serve(ln)
	t.Cleanup(func() { h.Close(); srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// openLive opens url in a headless Chromium driven over DevTools (the
// live page's event stream never ends: --dump-dom cannot wait for it).
func openLive(t *testing.T, url string) *browser.Browser {
	t.Helper()
	e2e.Only(t) // a browser case (a Chromium start is ~2 CPU-s): CI runs it
	bin := browser.Find()
	if bin == "" {
		t.Skip("no chromium on PATH: the live view is not checked in a browser")
	}
	b, err := browser.Start(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.Navigate(url); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLiveViewShowsTheRing(t *testing.T) {
	h := NewHub("live", 0)
	feed(t, h)
	url := serveHub(t, h)
	b := openLive(t, url+"#tab=timeline")
	ok, err := b.WaitFor(`document.querySelectorAll("details.row.kind-x").length == 4`, 30*time.Second)
	if err != nil || !ok {
		dom, _ := b.DOM()
		t.Fatalf("the live page does not show the 4 exchanges (%v):\n%.2000s", err, dom)
	}
}

// readEvents reads server-sent events from r until stop says so or the
// stream ends, returning every message's kind and the last value of each.
func readEvents(t *testing.T, r io.Reader, stop func(kind string, v json.RawMessage) bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct {
			T string          `json:"t"`
			V json.RawMessage `json:"v"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		if stop(m.T, m.V) {
			return
		}
	}
	t.Fatalf("the event stream ended: %v", sc.Err())
}

// The ring is bounded in bytes: a viewer that connects late gets the most
// recent messages within the bound, told first how many older ones are
// gone; with room for all, none is gone.
func TestHubRingBoundedInBytes(t *testing.T) {
	for _, tc := range []struct {
		ring        int
		wantEvicted bool
	}{{1 << 20, false}, {2000, true}} {
		h := NewHub("x", tc.ring)
		for i := range 100 {
			h.Note(tap.Note{Kind: tap.NoteEOF, Conn: fmt.Sprintf("c%03d", i), Dir: tap.FromHarness})
		}
		srv := httptest.NewServer(h.Handler([]byte("page"), false))
		resp, err := http.Get(srv.URL + "/events")
		if err != nil {
			t.Fatal(err)
		}
		var evicted uint64
		bytes, notes := 0, 0
		readEvents(t, resp.Body, func(kind string, v json.RawMessage) bool {
			switch kind {
			case "evicted":
				json.Unmarshal(v, &evicted)
			case "note":
				notes++
				bytes += len(v)
				return strings.Contains(string(v), `"c099"`) // the newest
			}
			return false
		})
		resp.Body.Close()
		h.Close()
		srv.Close()
		if tc.wantEvicted != (evicted > 0) || int(evicted)+notes != 100 {
			t.Errorf("ring %d: %d evicted, %d notes sent; want all 100 accounted for, evicted=%v", tc.ring, evicted, notes, tc.wantEvicted)
		}
		if tc.wantEvicted && bytes > tc.ring {
			t.Errorf("ring %d: %d bytes of notes kept", tc.ring, bytes)
		}
	}
}

// A viewer that does not read never holds up the audit side: publishing
// goes on, the viewer's queue stays within ClientQueue, and once it reads
// again it is told how many messages it skipped. A viewer that keeps up
// skips none.
func TestHubViewerThatLagsSkips(t *testing.T) {
	h := NewHub("x", 1<<20)
	srv := httptest.NewServer(h.Handler([]byte("page"), false))
	defer srv.Close()
	defer h.Close()
	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for h.Viewers() == 0 {
		time.Sleep(time.Millisecond)
	}
	// 25 MiB of findings while the viewer reads nothing: far past what the
	// queue and the socket buffers hold.
	big := strings.Repeat("m", 64<<10)
	for i := range 400 {
		h.Write(tap.Finding{Check: "BASE-1", Level: tap.Error, Message: big, Seq: uint64(i + 1)})
	}
	h.mu.Lock()
	for v := range h.viewers {
		if v.bytes > ClientQueue {
			t.Errorf("the viewer's queue holds %d bytes, over %d", v.bytes, ClientQueue)
		}
	}
	h.mu.Unlock()
	h.Write(tap.Finding{Check: "BASE-2", Level: tap.Error, Message: "last"})
	var skipped uint64
	readEvents(t, resp.Body, func(kind string, v json.RawMessage) bool {
		if kind == "skipped" {
			json.Unmarshal(v, &skipped)
			return true
		}
		return false
	})
	if skipped == 0 {
		t.Error("the lagging viewer was not told it skipped messages")
	}

	// A viewer that keeps up: every message, no skip.
	h2 := NewHub("y", 1<<20)
	srv2 := httptest.NewServer(h2.Handler([]byte("page"), false))
	defer srv2.Close()
	defer h2.Close()
	resp2, err := http.Get(srv2.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	for h2.Viewers() == 0 {
		time.Sleep(time.Millisecond)
	}
	go func() {
		for i := range 200 {
			h2.Write(tap.Finding{Check: "BASE-1", Level: tap.Error, Message: "m", Seq: uint64(i + 1)})
		}
	}()
	n := 0
	readEvents(t, resp2.Body, func(kind string, v json.RawMessage) bool {
		if kind == "skipped" {
			t.Error("a viewer that keeps up skipped messages")
		}
		n++
		return n == 200
	})
}

// The page and its events are served to loopback Host names only (no DNS
// rebinding), to GET only.
func TestHubHandlerGuards(t *testing.T) {
	h := NewHub("x", 0)
	defer h.Close()
	srv := httptest.NewServer(h.Handler([]byte("page"), false))
	defer srv.Close()
	for _, c := range []struct {
		method, host, path string
		want               int
	}{
		{"GET", "", "/", 200}, {"GET", "localhost:1", "/", 200}, {"GET", "evil.example", "/", 421},
		{"GET", "evil.example", "/events", 421}, {"POST", "", "/", 405}, {"GET", "", "/x", 404},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s Host %q: %d, want %d", c.method, c.path, c.host, resp.StatusCode, c.want)
		}
	}
	if _, err := Listen("0.0.0.0:0", false); err == nil {
		t.Error("Listen on every interface without allowRemote succeeded")
	}
}

var update = flag.Bool("update", false, "rewrite docs/img/live.png")

// TestREADMELiveScreenshot takes the README's screenshot of the live view
// (a hub fed the CI capture, in Chromium at 800 px, one exchange open);
// with -update it writes docs/img/live.png (go test ./internal/viewserve
// -run TestREADMELiveScreenshot -update).
func TestREADMELiveScreenshot(t *testing.T) {
	h := NewHub("stdio", 0)
	feed(t, h)
	b := openLive(t, serveHub(t, h)+"#tab=timeline")
	if ok, err := b.WaitFor(`document.querySelectorAll("details.row.kind-x").length == 4`, 30*time.Second); !ok || err != nil {
		t.Fatalf("the live page does not show the exchanges: %v", err)
	}
	if _, err := b.Eval(`document.querySelectorAll("details.row > summary").forEach(function (s) { if (s.textContent.indexOf("git push") >= 0) s.click(); }); true`); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.WaitFor(`document.querySelector("details.row[open] pre.frame") !== null`, 30*time.Second); !ok || err != nil {
		t.Fatalf("the exchange did not open: %v", err)
	}
	png, err := b.Screenshot()
	if err != nil {
		t.Skipf("chromium cannot take screenshots here: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatal("the screenshot is not a PNG")
	}
	readme, _ := os.ReadFile("../../README.md")
	if !bytes.Contains(readme, []byte("docs/img/live.png")) {
		t.Error("README.md does not show docs/img/live.png")
	}
	if *update {
		if err := os.WriteFile("../../docs/img/live.png", png, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if _, err := os.Stat("../../docs/img/live.png"); err != nil {
		t.Errorf("docs/img/live.png: %v (-update takes it)", err)
	}
}
