package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestCollector(t *testing.T) {
	c := Collector{Limit: 2}
	c.Write(sample(0))
	c.Write(tap.Finding{Check: "BASE-10", Level: tap.Warn})
	c.Write(tap.Finding{Check: "BASE-2", Level: tap.Info})
	if got := len(c.Findings()); got != 2 {
		t.Errorf("kept %d findings, want 2 (Limit)", got)
	}
	lv := c.Levels()
	if lv != (LevelCounts{Error: 1, Warn: 1, Info: 1}) {
		t.Errorf("Levels() = %+v", lv)
	}
	if lv.AtLeast(tap.Warn) != 2 || lv.AtLeast(tap.Error) != 1 || lv.AtLeast(tap.Info) != 3 {
		t.Errorf("AtLeast wrong: %+v", lv)
	}
	bc := c.ByCheck()
	if len(bc) != 2 || bc[0].Check != "BASE-2" || bc[1].Check != "BASE-10" {
		t.Errorf("ByCheck() = %+v, want BASE-2 before BASE-10", bc)
	}
	if bc[0].LevelCounts != (LevelCounts{Error: 1, Info: 1}) {
		t.Errorf("BASE-2 counts = %+v", bc[0].LevelCounts)
	}
}

func TestSummaryText(t *testing.T) {
	m := NewMeter(tap.FromHarness)
	m.Write([]byte("abc"))
	m.AddFrames(1)
	var c Collector
	c.Write(sample(0))
	s := c.Summary()
	s.Streams = []Stream{m.Stream()}
	s.NotAudited = 3
	s.NotPossible = []NotPossible{{Check: "CORR-3", Reason: "no --timeout and no registration"}}
	var b bytes.Buffer
	s.WriteText(&b)
	want := "summary: 1 error, 0 warnings, 0 info\n" +
		"  harness -> backend: 1 frame, 3 bytes, sha256 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n" +
		"  BASE-2   1 error, 0 warnings, 0 info; first: #1 sent by harness at /params/protocolVersion: params.protocolVersion is \"v0\"; expected \"draft\".\n" +
		"  frames not audited: 3 (forwarded unchanged)\n" +
		"  not checked: CORR-3 (no --timeout and no registration)\n"
	if b.String() != want {
		t.Errorf("WriteText() =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteTextAndJSON(t *testing.T) {
	srcs := []Source{{Name: "a.json", Findings: []tap.Finding{sample(0)}}, {Name: "b.json"}}
	var b bytes.Buffer
	if err := WriteText(&b, srcs, SummaryOf(srcs)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "a.json: #1 sent by harness: error BASE-2 at /params/protocolVersion: ") ||
		!strings.Contains(b.String(), "summary: 2 sources checked, 1 error") {
		t.Errorf("WriteText() = %q", b.String())
	}
	b.Reset()
	if err := WriteJSON(&b, srcs, SummaryOf(srcs)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Findings []map[string]any
		Summary  Summary
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Findings) != 1 || doc.Findings[0]["source"] != "a.json" || doc.Findings[0]["check"] != "BASE-2" ||
		doc.Findings[0]["level"] != "error" || doc.Summary.Levels.Error != 1 || doc.Summary.Sources != 2 {
		t.Errorf("WriteJSON() = %s", b.String())
	}
}

// The text summary gives each check's count and its first finding, with
// the input it came from when there are several.
func TestSummaryFirstExample(t *testing.T) {
	long := strings.Repeat("m", 150)
	sources := []Source{
		{Name: "a.capture", Findings: []tap.Finding{
			{Check: "BASE-2", Level: tap.Error, Seq: 4, Dir: tap.FromBackend, Pointer: "/result/protocolVersion", Message: "first one"},
			{Check: "BASE-2", Level: tap.Error, Seq: 9, Dir: tap.FromBackend, Message: "second one"},
		}},
		{Name: "b.capture", Findings: []tap.Finding{
			{Check: "CORR-2", Level: tap.Warn, Seq: 2, Dir: tap.FromHarness, Message: long},
		}},
	}
	var b strings.Builder
	if err := WriteText(&b, sources, SummaryOf(sources)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"BASE-2   2 errors, 0 warnings, 0 info; first: a.capture #4 sent by backend at /result/protocolVersion: first one\n",
		"CORR-2   0 errors, 1 warning, 0 info; first: b.capture #2 sent by harness: " + strings.Repeat("m", 100) + "…\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// Issue 28 item 14, without a browser: the page's script takes a #tab=
// value only from its list of views, that list is exactly the page's tab
// buttons and view elements, and the value reaches the DOM through nothing
// else.
func TestHTMLTabWhitelist(t *testing.T) {
	var buf bytes.Buffer
	r, err := NewRun(RunConfig{Header: header(), Writers: []Writer{NewHTML(&buf)}})
	if err != nil {
		t.Fatal(err)
	}
	replayFile(t, r, ciCapture)
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	m := regexp.MustCompile(`var TABS = (\[[^\]]*\]);`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page's script has no TABS list: #tab= is not checked against the known views")
	}
	var tabs []string
	if err := json.Unmarshal([]byte(m[1]), &tabs); err != nil {
		t.Fatalf("TABS %s: %v", m[1], err)
	}
	var buttons []string
	for _, b := range regexp.MustCompile(`<button id="tab-(\w+)"`).FindAllStringSubmatch(page, -1) {
		buttons = append(buttons, b[1])
		if !strings.Contains(page, `<div id="`+b[1]+`"`) {
			t.Errorf("tab %q has no view element", b[1])
		}
	}
	if strings.Join(tabs, ",") != strings.Join(buttons, ",") || len(tabs) == 0 {
		t.Errorf("TABS = %v, the page's tab buttons are %v", tabs, buttons)
	}
	// Where the fragment is read, tab is only assigned through TABS, and
	// any other key only when it is one of the state's own.
	read := page[strings.Index(page, "function readHash()"):]
	read = read[:strings.Index(read, "function writeHash()")]
	if !strings.Contains(read, `k === "tab"`) || !strings.Contains(read, "TABS.indexOf(v) >= 0") || !(strings.Contains(read, "hasOwnProperty.call(state, k)") || strings.Contains(read, "FILTERS.indexOf(k) >= 0")) || strings.Contains(read, "k in state") {
		t.Errorf("readHash does not take tab from TABS only:\n%s", read)
	}
	// render re-checks before using the value as an element id.
	rend := page[strings.Index(page, "function render()"):]
	if i := strings.Index(rend, "$(state.tab)"); i < 0 || !strings.Contains(rend[:i], "TABS.indexOf(state.tab) < 0") {
		t.Error("render uses state.tab as an element id without checking it against TABS first")
	}
}

// Issue 24 item 1: the conversation view is bounded, and past its bounds
// the page says what it left out.
func TestHTMLConversationBounded(t *testing.T) {
	page := func(items, bytes int) string {
		var buf strings.Builder
		h := NewHTML(&buf)
		if items > 0 {
			h.maxItems = items
		}
		if bytes > 0 {
			h.maxBytes = bytes
		}
		r, err := NewRun(RunConfig{Header: header(), Writers: []Writer{h}})
		if err != nil {
			t.Fatal(err)
		}
		replayFile(t, r, ciCapture)
		if _, err := r.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	timeline := func(p string) []map[string]any {
		i := strings.Index(p, `id="data-timeline">`)
		j := strings.Index(p[i:], "</script>")
		var v []map[string]any
		if err := json.Unmarshal([]byte(p[i+len(`id="data-timeline">`):i+j]), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	whole := page(0, 0)
	if all := timeline(whole); len(all) != 11 || strings.Contains(whole, "not in the conversation view") || strings.Contains(whole, "without their bytes") {
		t.Errorf("unbounded: %d items (want the 8 frames and 3 notes), or a left-out note", len(all))
	}
	cut := page(3, 0)
	if n := len(timeline(cut)); n != 3 || !strings.Contains(cut, "<li>8 frames and notes beyond the first 3 are not in the conversation view</li>") {
		t.Errorf("3 items: %d kept, or no note of the 8 left out", n)
	}
	small := page(0, 400)
	items := timeline(small)
	gone := 0
	for _, it := range items {
		if it["gone"] == true {
			gone++
		}
	}
	if gone == 0 || len(items) != 11 || !strings.Contains(small, fmt.Sprintf("<li>%d frames are listed without their bytes (the page holds at most 400 bytes of frames)</li>", gone)) {
		t.Errorf("400 bytes: %d of %d items without bytes, or no note", gone, len(items))
	}
}
