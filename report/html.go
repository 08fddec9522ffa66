package report

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Caps on what one HTML page embeds, so that a page for a multi-GB
// capture stays loadable: findings (with their frames up to a byte
// budget) and exchanges beyond these are counted and left out, and the
// page says so.
const (
	HTMLMaxFindings   = 50000
	HTMLMaxFrameBytes = 32 << 20
	HTMLMaxExchanges  = 200000
)

//go:embed html.js
var htmlScript string

//go:embed html.css
var htmlStyle string

// HTML writes one self-contained page (no network, no external script or
// font): the summary table at the top, the claim matrix when there is
// one, the exchanges as a timeline and the findings, each at the frame it
// concerns with the frame pretty-printed and the pointer highlighted.
// Rows are rendered a page at a time by the embedded script, with filters
// by check, level and event type, so a 100,000-frame capture does not
// build a huge DOM. Findings and exchanges are spooled to temporary files
// while the run streams (the summary, which comes first, needs totals).
type HTML struct {
	w io.Writer
	// Title heads the page.
	Title string
	// Now stamps the page (tests set it for stable output).
	Now func() time.Time

	h                   *Header
	findings, exchanges *spool
	frameBytes          int
	droppedF, droppedX  int
	eventTypes          map[string]bool
}

// NewHTML returns an HTML writer to w.
func NewHTML(w io.Writer) *HTML {
	return &HTML{w: w, Title: "ahp-tap report", Now: time.Now, eventTypes: map[string]bool{}}
}

// A spool is a temporary file of comma-separated JSON values.
type spool struct {
	f   *os.File
	bw  *bufio.Writer
	enc *json.Encoder
	n   int
}

func newSpool() (*spool, error) {
	f, err := os.CreateTemp("", "ahp-tap-report-*.json") // mode 0600
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // unlinked: gone when closed, whatever happens
	bw := bufio.NewWriterSize(f, 64<<10)
	return &spool{f: f, bw: bw, enc: json.NewEncoder(bw)}, nil
}

func (s *spool) add(v any) error {
	if s.n > 0 {
		s.bw.WriteByte(',')
	}
	s.n++
	return s.enc.Encode(v) // escapes <, > and &: safe inside <script>
}

// copyTo writes the spooled values to w and closes the spool.
func (s *spool) copyTo(w io.Writer) error {
	defer s.f.Close()
	if err := s.bw.Flush(); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(w, s.f)
	return err
}

// Begin implements Writer.
func (h *HTML) Begin(hd *Header) error {
	h.h = hd
	var err error
	if h.findings, err = newSpool(); err != nil {
		return err
	}
	h.exchanges, err = newSpool()
	return err
}

// Input implements Writer.
func (h *HTML) Input(*StreamInput) error { return nil }

type htmlFinding struct {
	Input     string `json:"in"`
	Line      int    `json:"line,omitempty"`
	Check     string `json:"check"`
	Rule      string `json:"rule,omitempty"`
	Req       string `json:"req,omitempty"`
	Level     string `json:"level"`
	Message   string `json:"msg"`
	Pointer   string `json:"ptr,omitempty"`
	Seq       uint64 `json:"seq,omitempty"`
	Dir       string `json:"dir,omitempty"`
	Conn      string `json:"conn,omitempty"`
	RPCID     string `json:"id,omitempty"`
	EventType string `json:"ev,omitempty"`
	Frame     string `json:"frame,omitempty"`
	Cut       bool   `json:"cut,omitempty"` // the frame is a prefix
	Baselined bool   `json:"base,omitempty"`
	FP        string `json:"fp"`
}

// Finding implements Writer.
func (h *HTML) Finding(it *Item) error {
	if h.findings.n >= HTMLMaxFindings {
		h.droppedF++
		return nil
	}
	f := it.Finding
	// The event type is a filter's option and a value to match, in its
	// printable form in both places (internal/printable).
	ev := printable.String(it.EventType)
	hf := htmlFinding{Input: it.Input, Line: it.Line, Check: f.Check, Rule: f.Rule, Req: f.Requirement, Level: f.Level.String(),
		Message: f.Message, Pointer: f.Pointer, Seq: f.Seq, Conn: f.Conn, RPCID: f.RPCID, EventType: ev,
		Baselined: it.Baselined, FP: it.Fingerprint}
	if f.Dir != 0 {
		hf.Dir = f.Dir.String()
	}
	if ev != "" {
		h.eventTypes[ev] = true
	}
	if len(it.Frame) > 0 && h.frameBytes+len(it.Frame) <= HTMLMaxFrameBytes {
		h.frameBytes += len(it.Frame)
		hf.Frame = string(it.Frame)
		hf.Cut = len(it.Frame) >= MaxItemFrame
	}
	return h.findings.add(hf)
}

type htmlExchange struct {
	Input   string  `json:"in"`
	Conn    string  `json:"conn,omitempty"`
	RPCID   string  `json:"id,omitempty"`
	Method  string  `json:"m,omitempty"`
	Event   string  `json:"ev,omitempty"`
	EventID string  `json:"eid,omitempty"`
	Req     uint64  `json:"rq,omitempty"`
	Resp    uint64  `json:"rs,omitempty"`
	Outcome string  `json:"out,omitempty"`
	Latency float64 `json:"ms,omitempty"`
}

// Exchange implements Writer.
func (h *HTML) Exchange(x *Exchange) error {
	if h.exchanges.n >= HTMLMaxExchanges {
		h.droppedX++
		return nil
	}
	ev := printable.String(x.EventType)
	if ev != "" && len(h.eventTypes) < 256 {
		h.eventTypes[ev] = true
	}
	return h.exchanges.add(htmlExchange{Input: x.Input, Conn: x.Conn, RPCID: x.RPCID, Method: x.Method, Event: ev,
		EventID: x.EventID, Req: x.RequestSeq, Resp: x.ResponseSeq, Outcome: x.Outcome, Latency: x.LatencyMs})
}

// End implements Writer.
func (h *HTML) End(e *End) error {
	bw := bufio.NewWriterSize(h.w, 64<<10)
	// Text in the page's markup is printable too: no control character
	// from an input name, an event type or a reason reaches the file.
	esc := func(s string) string { return html.EscapeString(printable.String(s)) }
	verdict, vclass := "passed", "pass"
	switch {
	case e.Failing():
		verdict, vclass = "failed", "fail"
	case e.Levels.AtLeast(tap.Warn) > 0:
		// --fail-on above what was found, or never.
		verdict, vclass = "passed with findings", "warn"
	}
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"+
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"+
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<style>%s</style></head>\n<body>\n",
		esc(h.Title), htmlStyle)
	fmt.Fprintf(bw, "<header><h1>%s <span class=\"verdict %s\" id=\"verdict\">%s</span></h1>\n<p class=\"meta\">%s %s · snapshot %s · %s · %s",
		esc(h.Title), vclass, verdict, esc(h.h.Tool), esc(h.h.Version), esc(h.h.Snapshot), esc(h.Now().UTC().Format(time.RFC3339)), esc(levelText(e.Levels)))
	if e.Baselined > 0 {
		fmt.Fprintf(bw, ", %d baselined", e.Baselined)
	}
	bw.WriteString("</p></header>\n<main>\n")

	// Inputs.
	bw.WriteString("<section><h2>Inputs</h2><table class=\"inputs\"><thead><tr><th>input</th><th>frames</th><th>bytes</th><th>sha256</th></tr></thead><tbody>\n")
	for _, in := range e.Inputs {
		fmt.Fprintf(bw, "<tr><td>%s</td><td>%d</td><td>%d</td><td class=\"mono\">%s</td></tr>\n", esc(in.Name), in.Frames, in.Bytes, esc(in.SHA256))
		if in.Injected != "" {
			fmt.Fprintf(bw, "<tr><td colspan=\"4\"><strong>%s</strong></td></tr>\n", esc(InjectedLine(in)))
		}
	}
	bw.WriteString("</tbody></table></section>\n")

	// Summary by check.
	counts := map[string]CheckCount{}
	for _, cc := range e.ByCheck {
		counts[cc.Check] = cc
	}
	quiet := 0
	for _, c := range h.h.Catalogue {
		if counts[c.ID].Total() == 0 {
			quiet++
		}
	}
	fmt.Fprintf(bw, "<section><h2>Summary by check</h2><input type=\"checkbox\" id=\"show-all\"><label for=\"show-all\">show the %d checks without findings too</label>\n", quiet)
	bw.WriteString("<table id=\"summary\"><thead><tr><th>check</th><th>requirement</th><th>error</th><th>warn</th><th>info</th><th>status</th><th>what it checks</th></tr></thead><tbody>\n")
	for _, c := range h.h.Catalogue {
		cc := counts[c.ID]
		status, class := checkStatusText(c.ID, e.Inputs)
		if cc.Total() == 0 {
			class += " quiet"
		}
		fmt.Fprintf(bw, "<tr class=\"%s\" data-check=\"%s\"><td><a href=\"#check=%s\">%s</a></td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td></tr>\n",
			class, esc(c.ID), esc(c.ID), esc(c.ID), esc(c.Requirement), cc.Error, cc.Warn, cc.Info, esc(status), esc(c.Summary))
	}
	bw.WriteString("</tbody></table>\n")
	if len(e.Stale) > 0 || len(e.NotPossible) > 0 || h.droppedF > 0 || h.droppedX > 0 {
		bw.WriteString("<ul class=\"notes\">\n")
		for _, st := range StaleLines(e) {
			fmt.Fprintf(bw, "<li class=\"fail\">%s</li>\n", esc(st))
		}
		for _, np := range e.NotPossible {
			fmt.Fprintf(bw, "<li>not checked: %s (%s)</li>\n", esc(np.Check), esc(np.Reason))
		}
		if h.droppedF > 0 {
			fmt.Fprintf(bw, "<li>%d findings beyond the first %d are not in this page (see the SARIF or JSON report)</li>\n", h.droppedF, HTMLMaxFindings)
		}
		if h.droppedX > 0 {
			fmt.Fprintf(bw, "<li>%d exchanges beyond the first %d are not in this page</li>\n", h.droppedX, HTMLMaxExchanges)
		}
		bw.WriteString("</ul>\n")
	}
	bw.WriteString("</section>\n")

	if m := e.Claim; m != nil {
		fmt.Fprintf(bw, "<section><h2>Conformance claim</h2><p>role=%s binding=%s profiles=%s</p>\n",
			esc(m.Claim.Role), esc(m.Claim.Binding), esc(strings.Join(m.Claim.Profiles, ",")))
		if m.Incomplete != "" {
			fmt.Fprintf(bw, "<p class=\"fail\">Incomplete claim: %s</p>\n", esc(m.Incomplete))
		}
		bw.WriteString("<table id=\"claim\"><thead><tr><th>profile</th><th>requirement</th><th>status</th><th>checks</th><th>evidence</th></tr></thead><tbody>\n")
		for _, r := range m.Rows {
			ev := r.Why
			if r.Findings > 0 {
				ev = fmt.Sprintf("%d %s, e.g. %s", r.Findings, plural(r.Findings, "finding", "findings"), r.Example)
			}
			fmt.Fprintf(bw, "<tr class=\"%s\"><td>%s</td><td title=\"%s\">%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
				strings.ReplaceAll(r.Status, " ", "-"), esc(r.Profile), esc(r.Text), esc(r.Requirement), esc(r.Status), esc(strings.Join(r.Checks, " ")), esc(ev))
		}
		fmt.Fprintf(bw, "</tbody></table><p class=\"meta\">%s</p></section>\n", esc(m.NotObservable))
	}

	writeChainsHTML(bw, e.Chains)

	// Filters and the two paged views; the script fills them.
	bw.WriteString(`<section id="views"><h2>Findings and exchanges</h2>
<form id="filters" onsubmit="return false">
<label>check <select id="f-check"><option value="">all</option>`)
	for _, c := range h.h.Catalogue {
		fmt.Fprintf(bw, "<option>%s</option>", esc(c.ID))
	}
	bw.WriteString(`</select></label>
<label>level <select id="f-level"><option value="">all</option><option>error</option><option>warn</option><option>info</option></select></label>
<label>event type <select id="f-event"><option value="">all</option>`)
	for _, t := range sortedKeys(h.eventTypes) {
		fmt.Fprintf(bw, "<option>%s</option>", esc(t))
	}
	bw.WriteString(`</select></label>
<label>text <input id="f-text" type="search" placeholder="message, id, pointer"></label>
<span id="f-count" class="meta"></span>
</form>
<div class="tabs"><button id="tab-findings" class="on" type="button">Findings</button><button id="tab-timeline" type="button">Timeline</button></div>
<div id="findings"></div>
<div id="timeline" hidden></div>
<nav id="pager"></nav>
</section>
</main>
<script type="application/json" id="data-findings">[`)
	if err := h.findings.copyTo(bw); err != nil {
		return err
	}
	bw.WriteString("]</script>\n<script type=\"application/json\" id=\"data-exchanges\">[")
	if err := h.exchanges.copyTo(bw); err != nil {
		return err
	}
	bw.WriteString("]</script>\n<script>")
	bw.WriteString(htmlScript)
	bw.WriteString("</script>\n</body></html>\n")
	return bw.Flush()
}

// checkStatusText says how a check fared over every input.
func checkStatusText(id string, inputs []InputEnd) (string, string) {
	var pass, fail, skip int
	reason := ""
	for _, in := range inputs {
		for _, cs := range in.Checks {
			if cs.Check != id {
				continue
			}
			switch {
			case cs.Failed():
				fail++
			case !cs.Exercised:
				skip++
				if reason == "" {
					reason = cs.Why()
				}
			default:
				pass++
			}
		}
	}
	switch {
	case fail > 0:
		return "failed", "fail"
	case pass > 0:
		return "passed", "pass"
	case skip > 0:
		return reason, "skip"
	}
	return "", ""
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
