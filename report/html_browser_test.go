package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// chromium finds a headless-capable Chromium, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: the HTML report's DOM is not checked (apt-get install chromium)")
	return ""
}

// dumpDOM loads url in headless Chromium and returns the DOM after the
// page's script ran.
func dumpDOM(t *testing.T, bin, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=5000", "--dump-dom", url)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	return out.String()
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
