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
	"github.com/ahp-tap/ahp-tap/vocab"
)

// Caps on what one HTML page embeds, so that a page for a multi-GB
// capture stays loadable: findings (with their frames up to a byte
// budget) and exchanges beyond these are counted and left out, and the
// page says so.
const (
	HTMLMaxFindings   = 50000
	HTMLMaxFrameBytes = 32 << 20
	HTMLMaxExchanges  = 200000
	// HTMLMaxPerGroup caps the occurrences embedded of one group of
	// identical findings (one fingerprint): the group shows its full count.
	HTMLMaxPerGroup = 200
	// HTMLMaxTimelineItems caps the frames and notes of the conversation
	// view; HTMLMaxTimelineBytes the frame bytes they embed (a frame over
	// it is listed without its bytes).
	HTMLMaxTimelineItems = 300000
	HTMLMaxTimelineBytes = 48 << 20
	// htmlMaxGroups bounds the fingerprints whose full counts the page
	// keeps; findings of further ones show only what is embedded.
	htmlMaxGroups = 1 << 16
	// htmlMaxEdit caps the effective-edit summary one exchange embeds.
	htmlMaxEdit = 16 << 10
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

	h                             *Header
	findings, exchanges, timeline *spool
	frameBytes, timelineBytes     int
	droppedF, droppedX, droppedT  int
	// rawLeftOut counts timeline frames listed without their bytes.
	rawLeftOut int
	eventTypes map[string]bool
	// groups counts the findings of each fingerprint (at most
	// htmlMaxGroups of them), embedded counts those in the page.
	groups, embedded map[string]int
	// gen numbers the sessions of an input: frame numbers restart with
	// each capture segment, so a frame is known by input, gen, conn and
	// seq. lastSeq is the last frame number seen, lastIn its input.
	gen     int
	lastSeq uint64
	lastIn  string
	// maxItems and maxBytes bound the conversation view
	// (HTMLMaxTimelineItems, HTMLMaxTimelineBytes; tests lower them).
	maxItems, maxBytes int
	// live: the page of the live view (LivePage): no embedded data, no
	// run summary; the script reads server-sent events.
	live bool
}

// NewHTML returns an HTML writer to w.
func NewHTML(w io.Writer) *HTML {
	return &HTML{w: w, Title: "ahp-tap report", Now: time.Now, eventTypes: map[string]bool{},
		groups: map[string]int{}, embedded: map[string]int{}, maxItems: HTMLMaxTimelineItems, maxBytes: HTMLMaxTimelineBytes}
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
	if h.timeline, err = newSpool(); err != nil {
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
	Gen       int    `json:"g"`
}

// Finding implements Writer.
func (h *HTML) Finding(it *Item) error {
	if _, ok := h.groups[it.Fingerprint]; ok || len(h.groups) < htmlMaxGroups {
		h.groups[it.Fingerprint]++
	}
	if h.findings.n >= HTMLMaxFindings || h.embedded[it.Fingerprint] >= HTMLMaxPerGroup {
		h.droppedF++
		return nil
	}
	if _, ok := h.embedded[it.Fingerprint]; ok || len(h.embedded) < htmlMaxGroups {
		h.embedded[it.Fingerprint]++
	}
	f := it.Finding
	// The event type is a filter's option and a value to match, in its
	// printable form in both places (internal/printable).
	ev := printable.String(it.EventType)
	hf := htmlFinding{Input: it.Input, Line: it.Line, Check: f.Check, Rule: f.Rule, Req: f.Requirement, Level: f.Level.String(),
		Message: f.Message, Pointer: f.Pointer, Seq: f.Seq, Conn: f.Conn, RPCID: f.RPCID, EventType: ev,
		Baselined: it.Baselined, FP: it.Fingerprint, Gen: h.genOf(it.Input)}
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
	// Edit is what the edit evaluator concluded (effective values,
	// reasons), as the JSON report has it; left out past htmlMaxEdit.
	Edit json.RawMessage `json:"edit,omitempty"`
	Gen  int             `json:"g"`
	// Deadline is when a pending exchange's answer is due (Unix ms; live
	// view only).
	Deadline int64 `json:"dl,omitempty"`
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
	hx := htmlExchangeOf(x.Input, h.genOf(x.Input), &x.ExchangeRecord)
	return h.exchanges.add(hx)
}

// htmlExchangeOf is the page's record of an exchange.
func htmlExchangeOf(input string, gen int, x *tap.ExchangeRecord) htmlExchange {
	hx := htmlExchange{Input: input, Conn: x.Conn, RPCID: x.RPCID, Method: x.Method, Event: printable.String(x.EventType),
		EventID: x.EventID, Req: x.RequestSeq, Resp: x.ResponseSeq, Outcome: x.Outcome, Latency: x.LatencyMs, Gen: gen}
	if x.Edit != nil {
		if b, err := json.Marshal(x.Edit); err == nil && len(b) <= htmlMaxEdit {
			hx.Edit = b
		}
	}
	return hx
}

// genOf is the session number of what input now reports.
func (h *HTML) genOf(input string) int {
	if input != h.lastIn {
		return h.gen + 1 // no frame of the input yet: the next session's
	}
	return h.gen
}

// An htmlItem is one frame or transport note of the conversation view.
type htmlItem struct {
	Input string `json:"in"`
	Gen   int    `json:"g"`
	// Kind is request, notification, response or other (not a JSON-RPC
	// message: a stray stdout line, bad JSON) for a frame, note for a note.
	Kind   string `json:"k"`
	Seq    uint64 `json:"seq,omitempty"`
	Line   int    `json:"line,omitempty"`
	Conn   string `json:"conn,omitempty"`
	Dir    string `json:"dir,omitempty"`
	Time   string `json:"t,omitempty"`
	Method string `json:"m,omitempty"`
	Event  string `json:"ev,omitempty"`
	RPCID  string `json:"id,omitempty"`
	Raw    string `json:"raw,omitempty"`
	// Cut: Raw is a prefix (the audit copy or the page's cap); Gone: the
	// frame's bytes are over the page's budget.
	Cut    bool   `json:"cut,omitempty"`
	Gone   bool   `json:"gone,omitempty"`
	Size   int    `json:"size,omitempty"`
	Status int    `json:"st,omitempty"`
	Note   string `json:"note,omitempty"`
	Text   string `json:"text,omitempty"`
}

// TimelineFrame implements TimelineWriter.
func (h *HTML) TimelineFrame(input string, f *tap.Frame, line int) error {
	if input != h.lastIn || f.Seq <= h.lastSeq {
		h.gen++
	}
	h.lastIn, h.lastSeq = input, f.Seq
	if h.timeline.n >= h.maxItems {
		h.droppedT++
		return nil
	}
	it := frameItem(input, h.gen, f, line)
	if eventType := it.Event; eventType != "" && len(h.eventTypes) < 256 {
		h.eventTypes[eventType] = true
	}
	if h.timelineBytes+len(it.Raw) > h.maxBytes {
		it.Raw, it.Gone = "", true
		h.rawLeftOut++
	} else {
		h.timelineBytes += len(it.Raw)
	}
	return h.timeline.add(it)
}

// frameItem is the conversation item of a frame, its bytes cut at
// MaxItemFrame. The HTML writer counts them against its budget; live,
// each is sent on its own.
func frameItem(input string, gen int, f *tap.Frame, line int) htmlItem {
	it := htmlItem{Input: input, Gen: gen, Seq: f.Seq, Line: line, Conn: f.Conn, Time: stamp(f.Time), Size: f.Size}
	if f.Dir != 0 {
		it.Dir = f.Dir.String()
	}
	switch m := f.Msg.(type) {
	case *tap.Request:
		it.Kind, it.Method, it.RPCID = "request", m.Method, tap.IDText(f.RPCID())
	case *tap.Notification:
		it.Kind, it.Method = "notification", m.Method
	case *tap.Response:
		it.Kind, it.RPCID = "response", tap.IDText(f.RPCID())
	default:
		it.Kind = "other"
	}
	if t, ok := f.Event().Get("type").Text(); ok {
		it.Event = printable.String(t)
	}
	if f.HTTP != nil {
		it.Status = f.HTTP.Status
	}
	raw := f.Raw
	if len(raw) > MaxItemFrame {
		raw, it.Cut = raw[:MaxItemFrame], true
	}
	it.Cut = it.Cut || f.Truncated
	it.Raw = string(raw)
	return it
}

// noteItem is the conversation item of a transport note.
func noteItem(input string, gen int, n tap.Note) htmlItem {
	it := htmlItem{Input: input, Gen: gen, Kind: "note", Note: string(n.Kind), Conn: n.Conn, Time: stamp(n.Time), Text: noteText(n)}
	if n.Dir != 0 {
		it.Dir = n.Dir.String()
	}
	if n.HTTP != nil {
		it.Status = n.HTTP.Status
	}
	return it
}

func printableEvent(t string) string { return printable.String(t) }

// TimelineNote implements TimelineWriter.
func (h *HTML) TimelineNote(input string, n tap.Note) error {
	if input != h.lastIn {
		h.gen++
		h.lastIn, h.lastSeq = input, 0
	}
	if h.timeline.n >= h.maxItems {
		h.droppedT++
		return nil
	}
	it := noteItem(input, h.gen, n)
	return h.timeline.add(it)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// noteText says in one line what a transport note reports.
func noteText(n tap.Note) string {
	detail := ""
	if n.Detail != "" {
		detail = ": " + printable.String(n.Detail)
	}
	switch n.Kind {
	case tap.NoteStart:
		return "started" + detail
	case tap.NoteEOF:
		return fmt.Sprintf("the %s's stream ended (EOF)", n.Dir)
	case tap.NoteExit:
		if n.Signal != "" {
			return "the process was killed by " + printable.String(n.Signal)
		}
		return fmt.Sprintf("the process exited with status %d", n.ExitCode)
	case tap.NoteUpstreamFailure:
		return "the upstream could not be reached" + detail
	case tap.NoteHTTPResponse:
		if n.HTTP != nil {
			return fmt.Sprintf("HTTP %d without a JSON-RPC body", n.HTTP.Status)
		}
		return "an HTTP response without a JSON-RPC body"
	case tap.NoteHarnessGone:
		return "the harness went away" + detail
	case tap.NoteDropped:
		return fmt.Sprintf("%d frames were not audited (the audit copy was dropped)", n.Count)
	case tap.NoteEnd:
		return "the tap ended" + detail
	case tap.NoteDeadline:
		return "a deadline passed" + detail
	case tap.NoteKilled:
		return "the process was killed by the tap" + detail
	}
	return printable.String(string(n.Kind)) + detail
}

// relatedPointers names, per check, where in the request a finding about
// its response was judged against (the request's capabilities for an
// effect that was not advertised); the conversation view highlights it.
var relatedPointers = map[vocab.CheckID]string{
	vocab.Base9: "/params/capabilities",
	vocab.Edit6: "/params/capabilities",
	vocab.Edit3: "/params/event",
	vocab.Edit4: "/params/event",
	vocab.Edit5: "/params/event",
	vocab.Base2: "/params/protocolVersion",
	vocab.Base7: "/method",
	vocab.Corr1: "/id",
	vocab.Corr2: "/id",
	vocab.Base6: "/params/event",
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
	// The live page reads its events from the server that sent it
	// (connect-src 'self'); a report file connects nowhere.
	csp, body := "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:", "<body>"
	if h.live {
		csp, body = csp+"; connect-src 'self'", `<body data-live="1">`
	}
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"+
		"<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n"+
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<style>%s</style></head>\n%s\n",
		csp, esc(h.Title), htmlStyle, body)
	if h.live {
		fmt.Fprintf(bw, "<header><h1>%s <span class=\"verdict warn\" id=\"verdict\">live</span></h1>\n<p class=\"meta\">%s %s · snapshot %s · <span id=\"live-status\">connecting…</span></p></header>\n<main>\n",
			esc(h.Title), esc(h.h.Tool), esc(h.h.Version), esc(h.h.Snapshot))
	} else {
		fmt.Fprintf(bw, "<header><h1>%s <span class=\"verdict %s\" id=\"verdict\">%s</span></h1>\n<p class=\"meta\">%s %s · snapshot %s · %s · %s",
			esc(h.Title), vclass, verdict, esc(h.h.Tool), esc(h.h.Version), esc(h.h.Snapshot), esc(h.Now().UTC().Format(time.RFC3339)), esc(levelText(e.Levels)))
		if e.Baselined > 0 {
			fmt.Fprintf(bw, ", %d baselined", e.Baselined)
		}
		bw.WriteString("</p></header>\n<main>\n")
		h.writeRun(bw, e, esc)
	}
	return h.writeViews(bw, esc)
}

// writeRun writes what the run concluded: the inputs, the summary by
// check, the claim and the conduct chains.
func (h *HTML) writeRun(bw *bufio.Writer, e *End, esc func(string) string) {
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
	if len(e.Stale) > 0 || len(e.NotPossible) > 0 || h.droppedF > 0 || h.droppedX > 0 || h.droppedT > 0 || h.rawLeftOut > 0 {
		bw.WriteString("<ul class=\"notes\">\n")
		for _, st := range StaleLines(e) {
			fmt.Fprintf(bw, "<li class=\"fail\">%s</li>\n", esc(st))
		}
		for _, np := range e.NotPossible {
			fmt.Fprintf(bw, "<li>not checked: %s (%s)</li>\n", esc(np.Check), esc(np.Reason))
		}
		if h.droppedF > 0 {
			fmt.Fprintf(bw, "<li>%d findings are not listed one by one in this page (at most %d of one kind and %d in all; the groups count them all, the SARIF or JSON report lists them)</li>\n", h.droppedF, HTMLMaxPerGroup, HTMLMaxFindings)
		}
		if h.droppedX > 0 {
			fmt.Fprintf(bw, "<li>%d exchanges beyond the first %d are not in this page</li>\n", h.droppedX, HTMLMaxExchanges)
		}
		if h.droppedT > 0 {
			fmt.Fprintf(bw, "<li>%d frames and notes beyond the first %d are not in the conversation view</li>\n", h.droppedT, h.maxItems)
		}
		if h.rawLeftOut > 0 {
			fmt.Fprintf(bw, "<li>%d frames are listed without their bytes (the page holds at most %d bytes of frames)</li>\n", h.rawLeftOut, h.maxBytes)
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
}

// writeViews writes the filters and the two paged views, the data the
// script fills them from, and the script.
func (h *HTML) writeViews(bw *bufio.Writer, esc func(string) string) error {
	// Filters and the two paged views; the script fills them.
	bw.WriteString(`<section id="views"><h2>Findings and the conversation</h2>
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
<label>link <select id="f-link"><option value="">all</option></select></label>
<label>outcome <select id="f-outcome"><option value="">all</option></select></label>
<label>text <input id="f-text" type="search" placeholder="message, id, pointer"></label>
<span id="f-count" class="meta"></span>
</form>
<div class="tabs"><button id="tab-findings" class="on" type="button">Findings</button><button id="tab-timeline" type="button">Conversation</button></div>
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
	bw.WriteString("]</script>\n<script type=\"application/json\" id=\"data-timeline\">[")
	if err := h.timeline.copyTo(bw); err != nil {
		return err
	}
	bw.WriteString("]</script>\n<script type=\"application/json\" id=\"data-groups\">")
	related := map[string]string{}
	for c, p := range relatedPointers {
		related[string(c)] = p
	}
	enc := json.NewEncoder(bw) // escapes <, > and &: safe inside <script>
	if err := enc.Encode(h.groups); err != nil {
		return err
	}
	bw.WriteString("</script>\n<script type=\"application/json\" id=\"data-related\">")
	if err := enc.Encode(related); err != nil {
		return err
	}
	bw.WriteString("</script>\n<script>")
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
