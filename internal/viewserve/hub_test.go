package viewserve

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/internal/browser"
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

func (noteRecorder) Record(*tap.Frame)        {}
func (r noteRecorder) RecordNote(n tap.Note) { r.h.Note(n) }

func serveHub(t *testing.T, h *Hub) string {
	t.Helper()
	var page bytes.Buffer
	if err := report.LivePage(&page, report.Header{Tool: "ahp-tap", Version: "test", Snapshot: "draft", Catalogue: rules.Catalogue}, "live"); err != nil {
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
