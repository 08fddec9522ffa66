package report

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/browser"
	"github.com/ahp-tap/ahp-tap/internal/e2e"
	"github.com/ahp-tap/ahp-tap/tap"
)

// chromium finds a headless-capable Chromium, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	e2e.Only(t) // a browser case (a Chromium start is ~2 CPU-s): CI runs it
	bin := browser.Find()
	if bin == "" {
		t.Skip("no chromium on PATH: the HTML report's DOM is not checked (apt-get install chromium)")
	}
	return bin
}

// pages is the one headless Chromium that loads the pages of this test
// binary's browser tests, started by the first (a start costs about 2
// CPU-seconds, a page load a small part of that) and ended by TestMain.
var pages struct {
	once sync.Once
	dir  string
	b    *browser.Browser
	err  error
	mu   sync.Mutex // one page load at a time: the browser has one page
}

// closePages ends the shared Chromium, if a test started it.
func closePages() {
	if pages.b != nil {
		pages.b.Close()
	}
	if pages.dir != "" {
		os.RemoveAll(pages.dir)
	}
}

// dumpDOM loads url in headless Chromium (bin) and returns the DOM after
// the page's script ran.
func dumpDOM(t *testing.T, bin, url string) string {
	t.Helper()
	pages.once.Do(func() {
		if pages.dir, pages.err = os.MkdirTemp("", "report-chromium"); pages.err == nil {
			pages.b, pages.err = browser.Start(bin, pages.dir)
		}
	})
	if pages.err != nil {
		t.Fatal(pages.err)
	}
	pages.mu.Lock()
	defer pages.mu.Unlock()
	dom, err := pages.b.LoadDOM(url)
	if err != nil {
		t.Fatal(err)
	}
	return dom
}

// findingRowRE matches a row of the findings view: one group of identical
// findings (one fingerprint), with its count.
var findingRowRE = regexp.MustCompile(`<details class="finding lvl-(\w+)[^"]*" data-check="([^"]+)" data-level="\w+" data-fp="(\w+)" data-count="(\d+)"`)

// rowsCount is the number of findings the rows of a findings view stand for.
func rowsCount(rows [][]string) int {
	n := 0
	for _, m := range rows {
		c, _ := strconv.Atoi(m[4])
		n += c
	}
	return n
}

// The page, loaded in a real browser, shows every finding, and the
// filters (which live in the URL fragment) keep exactly the matching ones.
func TestHTMLInBrowser(t *testing.T) {
	bin := chromium(t)
	var buf bytes.Buffer
	h := NewHTML(&buf)
	r, err := NewRun(RunConfig{Header: header(), Writers: []Writer{h}, FailOn: tap.Error})
	if err != nil {
		t.Fatal(err)
	}
	replayFile(t, r, ciCapture)
	// A second input, so the page holds findings of the same check on two inputs.
	replayFile(t, r, ciCapture)
	end, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page
	want := 0
	for _, cc := range end.ByCheck {
		want += cc.Total()
	}

	dom := dumpDOM(t, bin, url)
	rows := findingRowRE.FindAllStringSubmatch(dom, -1)
	if rowsCount(rows) != want {
		t.Fatalf("the page's rows stand for %d findings, want %d", rowsCount(rows), want)
	}
	// The two inputs hold the same findings: identical ones are one row
	// each, counted twice.
	if len(rows) != want/2 {
		t.Errorf("the page shows %d rows, want %d (identical findings collapsed)", len(rows), want/2)
	}
	got := map[string]int{}
	for _, m := range rows {
		c, _ := strconv.Atoi(m[4])
		got[m[2]] += c
	}
	for _, cc := range end.ByCheck {
		if got[cc.Check] != cc.Total() {
			t.Errorf("%s: %d rows, want %d", cc.Check, got[cc.Check], cc.Total())
		}
	}
	if !strings.Contains(dom, `id="verdict">failed<`) {
		t.Error("the verdict is not 'failed'")
	}

	// Filter by check.
	dom = dumpDOM(t, bin, url+"#check=BASE-2")
	rows = findingRowRE.FindAllStringSubmatch(dom, -1)
	if rowsCount(rows) != got["BASE-2"] || len(rows) == 0 {
		t.Errorf("#check=BASE-2 shows %d findings, want %d", rowsCount(rows), got["BASE-2"])
	}
	for _, m := range rows {
		if m[2] != "BASE-2" {
			t.Errorf("#check=BASE-2 shows a %s row", m[2])
		}
	}
	if !strings.Contains(dom, rows[0][3]) {
		t.Error("fingerprint missing")
	}
	// Filter by level: the warnings are CORR-3's (a late answer); nothing is info.
	dom = dumpDOM(t, bin, url+"#level=warn")
	rows = findingRowRE.FindAllStringSubmatch(dom, -1)
	if len(rows) == 0 || rowsCount(rows) != got["CORR-3"] {
		t.Errorf("#level=warn shows %d findings, want the %d CORR-3 warnings", rowsCount(rows), got["CORR-3"])
	}
	for _, m := range rows {
		if m[1] != "warn" {
			t.Errorf("#level=warn shows a %s row", m[1])
		}
	}
	dom = dumpDOM(t, bin, url+"#level=info")
	if n := len(findingRowRE.FindAllStringSubmatch(dom, -1)); n != 0 || !strings.Contains(dom, "No finding matches.") {
		t.Errorf("#level=info shows %d rows, want none and a 'No finding matches.' note", n)
	}
	// Filter by event type: STDIO-1 (a banner) and BASE-1 (not JSON
	// enough to have an event) are not on tool.before frames.
	dom = dumpDOM(t, bin, url+"#event=tool.before")
	for _, m := range findingRowRE.FindAllStringSubmatch(dom, -1) {
		if m[2] == "STDIO-1" {
			t.Errorf("#event=tool.before shows a STDIO-1 row (a stdout banner has no event)")
		}
	}
	// The conversation lists every exchange, one row each.
	dom = dumpDOM(t, bin, url+"#tab=timeline")
	if n := strings.Count(dom, `<details class="row kind-x`); n != 2*4 {
		t.Errorf("conversation: %d exchange rows, want 8 (4 per input)", n)
	}
}

// The finding's frame is pretty-printed with its pointer highlighted when
// the row is opened (the page builds it lazily; here the test opens it
// through the same script by loading a page whose rows start open).
func TestHTMLPointerHighlight(t *testing.T) {
	bin := chromium(t)
	var buf bytes.Buffer
	h := NewHTML(&buf)
	r, _ := NewRun(RunConfig{Header: header(), Writers: []Writer{h}})
	replayFile(t, r, ciCapture)
	r.Close()
	// Open every row once the script has rendered: an extra inline script
	// appended after the report's own.
	page := strings.Replace(buf.String(), "</body>", `<script>document.querySelectorAll("details.finding").forEach(function(d){d.open=true});</script></body>`, 1)
	p := filepath.Join(t.TempDir(), "open.html")
	os.WriteFile(p, []byte(page), 0o600)
	dom := dumpDOM(t, bin, "file://"+p+"#check=BASE-2")
	// BASE-2 points at /result/protocolVersion: the "2025-06" value is marked.
	if !regexp.MustCompile(`<mark class="hl"><span class="s">"2025-06"</span></mark>`).MatchString(dom) {
		i := strings.Index(dom, `<pre class="frame">`)
		t.Errorf("the pointer's value is not highlighted; frame view: %.600s", dom[max(i, 0):])
	}
}

// Issue 28 item 14: the fragment's tab names an element, so a shared link
// with #tab=claim, #tab=summary or #tab=verdict could empty that element
// and hide the failing rows or the red "failed" badge. Only the page's own
// tabs are taken; anything else shows the findings.
func TestHTMLTabOnlyKnownViews(t *testing.T) {
	bin := chromium(t)
	var buf bytes.Buffer
	c, err := ParseClaim("role=backend,binding=stdio,profiles=base,tool-interception", "", "draft")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRun(RunConfig{Header: header(), Writers: []Writer{NewHTML(&buf)}, FailOn: tap.Error, Claim: c})
	if err != nil {
		t.Fatal(err)
	}
	replayFile(t, r, ciCapture)
	end, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, cc := range end.ByCheck {
		want += cc.Total()
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"", "#tab=claim", "#tab=summary", "#tab=verdict", "#tab=views", "#tab=pager", "#tab=__proto__", "#tab=constructor&__proto__=x", "#tab=findings"} {
		dom := dumpDOM(t, bin, "file://"+page+frag)
		if n := rowsCount(findingRowRE.FindAllStringSubmatch(dom, -1)); n != want {
			t.Errorf("%q: the page's rows stand for %d findings, want all %d", frag, n, want)
		}
		if !strings.Contains(dom, `id="verdict">failed<`) {
			t.Errorf("%q: the red 'failed' verdict is gone", frag)
		}
		if !strings.Contains(dom, `<table id="claim"><thead>`) || !strings.Contains(dom, `<table id="summary"><thead>`) {
			t.Errorf("%q: a table of the page was emptied", frag)
		}
		if regexp.MustCompile(`<div id="findings" hidden`).MatchString(dom) {
			t.Errorf("%q: the findings view is hidden", frag)
		}
	}
	// The timeline is still reachable by its link.
	if dom := dumpDOM(t, bin, "file://"+page+"#tab=timeline"); !strings.Contains(dom, `<details class="row kind-x`) {
		t.Error("#tab=timeline does not show the timeline")
	}
}

// withScript writes a copy of page with script run after the report's own
// (a user's clicks, in the test) and returns its file URL.
func withScript(t *testing.T, page []byte, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "page.html")
	s := strings.Replace(string(page), "</body>", "<script>"+script+"</script></body>", 1)
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

// ciPage is the HTML report of the CI capture.
func ciPage(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	r, err := NewRun(RunConfig{Header: header(), Writers: []Writer{NewHTML(&buf)}, FailOn: tap.Error})
	if err != nil {
		t.Fatal(err)
	}
	replayFile(t, r, ciCapture)
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var openRowRE = regexp.MustCompile(`(?s)<details class="row kind-x[^"]*"[^>]*open="">.*?</details>`)

// Issue 24 item 1: every exchange of the conversation opens to its
// request and response, pretty-printed, under a one-line summary; notes
// and stray lines are in the same timeline; the link and outcome filters
// keep exactly the matching rows.
func TestHTMLConversationInBrowser(t *testing.T) {
	bin := chromium(t)
	page := ciPage(t)

	// Click the exchange whose command is "git push --force", as a user would.
	click := `document.querySelector("#tab-timeline").click();
document.querySelectorAll("details.row > summary").forEach(function (s) { if (s.textContent.indexOf("git push") >= 0) s.click(); });`
	dom := dumpDOM(t, bin, withScript(t, page, click))
	open := openRowRE.FindAllString(dom, -1)
	if len(open) != 1 {
		t.Fatalf("%d exchanges open after the click, want 1", len(open))
	}
	row := open[0]
	for _, want := range []string{"tool.before", "Bash git push --force", "late", "reason: Force pushes need review.", "effects: deny",
		"request · harness → backend #3", "response · backend → harness #4", `<span class="s">"hooks/intercept"</span>`,
		// BASE-2's pointer is marked in the response.
		`<mark class="hl"><span class="s">"2025-06"</span></mark>`, "BASE-2"} {
		if !strings.Contains(row, want) {
			t.Errorf("the opened exchange lacks %q:\n%.3000s", want, row)
		}
	}
	if n := strings.Count(row, `<pre class="frame">`); n != 2 {
		t.Errorf("the opened exchange shows %d frames, want the request and the response", n)
	}
	// The clean exchange (evt-1) carries no badge and no mark.
	click1 := strings.Replace(click, "git push", "ls -la", 1)
	dom = dumpDOM(t, bin, withScript(t, page, click1))
	if open := openRowRE.FindAllString(dom, -1); len(open) != 1 || strings.Contains(open[0], `class="hl"`) || strings.Contains(open[0], `class="badge`) ||
		!strings.Contains(open[0], "no_effect") {
		t.Errorf("the clean exchange: %q", open)
	}

	// Notes and the stray stdout line are in the same timeline.
	dom = dumpDOM(t, bin, withScript(t, page, "")+"#tab=timeline")
	for _, want := range []string{"started: /usr/local/bin/review serve", "the harness's stream ended (EOF)", "stray line from the backend",
		"review: policy cache warmed (42 rules)", "→ unanswered", "(no response)"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the conversation lacks %q", want)
		}
	}
	if n := strings.Count(dom, `<details class="row `); n != 8 {
		t.Errorf("the conversation has %d rows, want 8 (4 exchanges, a stray line, 3 notes)", n)
	}

	// Filters: the outcome keeps the one denied exchange; an unknown link none.
	dom = dumpDOM(t, bin, withScript(t, page, "")+"#tab=timeline&outcome=explicit_deny")
	if n := strings.Count(dom, `<details class="row `); n != 1 || !strings.Contains(dom, "Bash rm -rf build") {
		t.Errorf("#outcome=explicit_deny shows %d rows, want the rm -rf exchange only", n)
	}
	dom = dumpDOM(t, bin, withScript(t, page, "")+"#tab=timeline&link=stdio:4242&check=CORR-2")
	if n := strings.Count(dom, `<details class="row `); n != 1 || !strings.Contains(dom, "Bash make test") {
		t.Errorf("#link=stdio:4242&check=CORR-2 shows %d rows, want the unanswered exchange only", n)
	}
	dom = dumpDOM(t, bin, withScript(t, page, "")+"#tab=timeline&link=stdio:1")
	if n := strings.Count(dom, `<details class="row `); n != 0 || !strings.Contains(dom, "Nothing in the conversation matches.") {
		t.Errorf("#link=stdio:1 shows %d rows, want none", n)
	}
	// A finding's "open in the conversation" link opens its exchange.
	dom = dumpDOM(t, bin, withScript(t, page, `document.querySelectorAll("details.finding").forEach(function(d){d.open=true});
setTimeout(function () { location.hash = document.querySelector("a.open").getAttribute("href"); }, 50);`)+"#check=BASE-2")
	if open := openRowRE.FindAllString(dom, -1); len(open) != 1 || !strings.Contains(open[0], "target") || !strings.Contains(open[0], "git push") {
		t.Errorf("the finding's link did not open its exchange: %d open", len(open))
	}
}

// A finding about a response shows the request it was judged against,
// with the place it was judged against marked.
func TestHTMLFindingJudgedAgainst(t *testing.T) {
	bin := chromium(t)
	page := ciPage(t)
	dom := dumpDOM(t, bin, withScript(t, page, `document.querySelectorAll("details.finding").forEach(function(d){d.open=true});`)+"#check=BASE-2")
	i := strings.Index(dom, "its request · harness → backend #3")
	if i < 0 {
		t.Fatalf("the BASE-2 finding does not show its request")
	}
	req := dom[i:]
	if j := strings.Index(req, "</pre>"); j > 0 {
		req = req[:j]
	}
	if !strings.Contains(req, `<mark class="hl"><span class="s">"draft"</span></mark>`) {
		t.Errorf("the request's protocolVersion is not marked:\n%.2000s", req)
	}
	// A finding about a request (CORR-2: never answered) has no response to show.
	dom = dumpDOM(t, bin, withScript(t, page, `document.querySelectorAll("details.finding").forEach(function(d){d.open=true});`)+"#check=CORR-2")
	if strings.Contains(dom, `class="meta">its response`) || strings.Contains(dom, `class="meta">its request`) || !strings.Contains(dom, `class="meta">the frame · harness → backend #8`) {
		i := strings.Index(dom, "the frame ·")
		t.Errorf("the CORR-2 finding should show its own request only: %.300s", dom[max(i, 0):])
	}
}

// hostile is markup and script that must reach the page only as text.
const hostile = `<img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script><b id="evil">evil</b>`

// hostileCapture writes a capture whose every string field (connection,
// ids, method, event type and payload, reason, effect type, a key, a
// stray line, a note's detail, the file name) holds markup.
func hostileCapture(t *testing.T) string {
	t.Helper()
	q := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	conn := "stdio:" + hostile
	ev := map[string]any{"id": hostile, "source": hostile, "type": hostile, "time": hostile, "harness": map[string]any{"name": hostile, "version": hostile},
		"session": map[string]any{"id": hostile}, "tool": map[string]any{"name": hostile, "input": map[string]any{"command": hostile}},
		"turn": map[string]any{"id": hostile}, "model": map[string]any{"id": hostile, "provider": hostile}, hostile: hostile}
	req := q(map[string]any{"jsonrpc": "2.0", "id": hostile, "method": "hooks/intercept", "params": map[string]any{"protocolVersion": "draft", "event": ev, "capabilities": map[string]any{"effects": []string{"deny"}}}})
	resp := q(map[string]any{"jsonrpc": "2.0", "id": hostile, "result": map[string]any{"protocolVersion": hostile,
		"effects": []any{map[string]any{"type": "deny", "reason": hostile, "code": hostile}, map[string]any{"type": hostile}}}})
	obs := q(map[string]any{"jsonrpc": "2.0", "method": "hooks/observe", "params": map[string]any{"protocolVersion": "draft", "event": ev}})
	rec := func(kind string, seq int, dir string, raw string) string {
		return q(map[string]any{"type": kind, "time": "2026-08-24T08:51:14.000Z", "seq": seq, "direction": dir, "transport": "stdio", "conn": conn, "raw": raw, "framing": map[string]any{"line": true}})
	}
	note := func(kind string) string {
		return q(map[string]any{"type": "note", "time": "2026-08-24T08:51:18.000Z", "conn": conn,
			"note": map[string]any{"kind": kind, "time": "2026-08-24T08:51:18.000Z", "conn": conn, "detail": hostile, "signal": hostile}})
	}
	lines := []string{
		q(map[string]any{"type": "header", "format": "ahp-tap-capture", "version": 1, "tool": hostile, "snapshot": "draft", "transport": "stdio", "started": "2026-08-24T08:51:13.900Z", "conn": conn}),
		note("start"),
		rec("frame", 1, "harness", req),
		rec("frame", 2, "backend", resp),
		rec("frame", 3, "harness", obs),
		rec("frame", 4, "backend", hostile),
		note(hostile),
		note("exit"),
	}
	p := filepath.Join(t.TempDir(), `evil<b id="evilname">.capture`)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var titleRE = regexp.MustCompile(`<title>([^<]*)</title>`)

// Issue 24 item 1: nothing from a capture reaches the page as markup. A
// capture with markup and script in every string field is loaded with
// every row of both views opened: the markup shows as text, no element of
// it exists and no script of it ran.
func TestHTMLHostileCapture(t *testing.T) {
	bin := chromium(t)
	var buf bytes.Buffer
	r, err := NewRun(RunConfig{Header: header(), Writers: []Writer{NewHTML(&buf)}})
	if err != nil {
		t.Fatal(err)
	}
	replayFile(t, r, hostileCapture(t))
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "</script>"); n != 6 {
		t.Fatalf("</script> appears %d times in the page, want 6: capture data closed a script", n)
	}
	openAll := `function openAll() { document.querySelectorAll("details").forEach(function (d) { d.open = true; }); }
openAll(); setTimeout(openAll, 20); setTimeout(openAll, 40);`
	for _, frag := range []string{"", "#tab=timeline", "#tab=timeline&text=" + url.QueryEscape("<b")} {
		dom := dumpDOM(t, bin, withScript(t, buf.Bytes(), openAll)+frag)
		if m := titleRE.FindStringSubmatch(dom); m == nil || m[1] != "ahp-tap report" {
			t.Errorf("%q: the title is %q: a script of the capture ran", frag, m)
		}
		for _, bad := range []string{"<img", `<b id="evil"`, `<b id="evilname"`, "<script>document.title"} {
			if strings.Contains(dom, bad) {
				i := strings.Index(dom, bad)
				t.Errorf("%q: %q reached the DOM as markup: %.200s", frag, bad, dom[max(0, i-100):])
			}
		}
		// The markup is there, as text: the views did render it.
		if n := strings.Count(dom, `&lt;img src=x onerror="document.title='pwned'"&gt;`); n < 3 {
			t.Errorf("%q: the capture's markup shows as text %d times, want it in the rows and frames", frag, n)
		}
	}
}
