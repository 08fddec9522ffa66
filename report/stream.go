package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/ahp-tap/ahp-tap/conduct"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A Writer is one report format, fed while a run streams: Begin once,
// then for every input Input followed by its findings and exchanges, then
// End once with the totals. A Writer keeps bounded state: formats that
// need totals before items (JUnit, HTML) keep a capped sample or spool to
// a temporary file. Calls are never concurrent. End flushes; it does not
// close the io.Writer the format writes to.
type Writer interface {
	Begin(h *Header) error
	Input(in *StreamInput) error
	Finding(it *Item) error
	Exchange(x *Exchange) error
	End(e *End) error
}

// A TimelineWriter is a Writer that also takes every frame and transport
// note of each input, in the order the session saw them (the HTML report's
// conversation view). The frame is decoded; the writer copies what it
// keeps, within its own bounds.
type TimelineWriter interface {
	Writer
	TimelineFrame(input string, f *tap.Frame, line int) error
	TimelineNote(input string, n tap.Note) error
}

// A Header describes the run before any input.
type Header struct {
	Tool     string // "ahp-tap"
	Version  string
	Snapshot string
	// Catalogue is every check a finding can carry, in catalogue order.
	Catalogue []rules.Check
}

// A StreamInput is one file (or stream) being checked, as report writers see it.
type StreamInput struct {
	// Name is the name as given on the command line ("-": standard input).
	Name string
	// URI is Name relative to the report root, with forward slashes
	// (SARIF artifact locations).
	URI string
}

// An Item is one finding as reports see it: where it is in its input and
// how it is recognised across runs.
type Item struct {
	Input string
	URI   string
	// Line is the 1-based line of the frame in the input (capture or NDJSON
	// line), 0 when unknown (end-of-stream findings about no frame).
	Line    int
	Finding tap.Finding
	// Shape is the message kind, method and event type of the frame
	// ("request hooks/intercept tool.before"), "" for no frame.
	Shape     string
	EventType string
	// Fingerprint identifies the finding independently of line numbers
	// and timestamps (see Fingerprint).
	Fingerprint string
	// Frame is the frame's bytes (capped at MaxItemFrame), nil when the
	// frame is no longer at hand.
	Frame []byte
	// Baselined is set when a --baseline entry accepts the finding.
	Baselined bool
}

// An Exchange is one request/response exchange of an input.
type Exchange struct {
	Input string
	tap.ExchangeRecord
}

// CheckStatus is what one input says about one catalogue check.
type CheckStatus struct {
	Check string
	// Findings counts the input's findings under the check, by level
	// (baselined ones included).
	Findings LevelCounts
	// Counted counts the findings not accepted by a baseline.
	Counted LevelCounts
	// Exercised is set when the input held traffic the check judges.
	Exercised bool
	// NotChecked is set when no configuration of the input could make the
	// check (no deadline, no registration, another lifecycle).
	NotChecked bool
	// Reason says why a check was not exercised or not checked.
	Reason string
}

// Why says why the check has no verdict on the input: "not checked: …"
// or "not exercised: …" ("" when it was exercised).
func (cs CheckStatus) Why() string {
	switch {
	case cs.Exercised:
		return ""
	case cs.NotChecked:
		return "not checked: " + cs.Reason
	}
	return "not exercised: " + cs.Reason
}

// Failed reports whether the check failed on the input: a finding at
// warn or above that no baseline accepts (info findings are context).
func (cs CheckStatus) Failed() bool { return cs.Counted.Error+cs.Counted.Warn > 0 }

// An InputEnd is what the run knows about an input once it is read.
type InputEnd struct {
	Name   string
	URI    string
	Frames uint64
	Bytes  uint64
	// SHA256 is the hex SHA-256 of the input's bytes, when known.
	SHA256 string
	// Checks holds one status per catalogue check, in catalogue order.
	Checks []CheckStatus
	// Injected, when set, says that the input is the capture of a run
	// that injected faults on purpose (capture.Header.Injected): every
	// format says so.
	Injected string
}

// InjectedLine is what a report says of an input whose traffic a tap
// altered on purpose (--inject).
func InjectedLine(in InputEnd) string {
	return in.Name + ": " + in.Injected + "; the backend is not judged by the tap's answers"
}

// Injected marks the current input as the capture of a run that injected
// faults (the header's text).
func (r *Run) Injected(text string) {
	if r == nil || r.cur == nil || text == "" {
		return
	}
	r.cur.end.Injected = text
}

// An End is the run's totals, given to every writer once.
type End struct {
	Inputs []InputEnd
	// Levels counts the findings that count against the run (not
	// baselined); Baselined counts the others.
	Levels    LevelCounts
	Baselined int
	// ByCheck counts every finding per check.
	ByCheck []CheckCount
	// NotPossible lists checks no session of the run could make (its
	// configuration could not: no deadline, no registration, another
	// lifecycle), and why: the catalogue's answer (rules.Coverage).
	NotPossible []NotPossible
	// Stale lists baseline entries that no longer occur: each fails the run.
	// At most MaxStaleListed are listed; StaleCount counts them all.
	Stale      []BaselineEntry
	StaleCount int
	// Claim is the conformance-claim matrix, when --claim was given.
	Claim *ClaimMatrix
	// FailOn is the --fail-on level (0: never).
	FailOn tap.Level
	// Chains is the per-event view of the conduct timeline, when the run
	// judged conduct across a registration's links (Run.Conduct).
	Chains []conduct.Chain
}

// Failing reports whether the run fails: a counted finding at or above
// FailOn, or a stale baseline entry.
func (e *End) Failing() bool {
	if len(e.Stale) > 0 || e.StaleCount > 0 {
		return true
	}
	return e.FailOn != 0 && e.Levels.AtLeast(e.FailOn) > 0
}

// MaxItemFrame caps the frame bytes an Item carries to writers.
const MaxItemFrame = 64 << 10

// Bounds of the frames a Run keeps so that findings reported after their
// frame (a request never answered) still name its line and show its bytes
// (see frameCache).
const (
	recentFrames   = 16
	pendingEntries = 1 << 16
	pendingBytes   = 8 << 20
)

// RunConfig configures a Run.
type RunConfig struct {
	Header  Header
	Writers []Writer
	// Root is the directory SARIF artifact URIs are relative to ("" : the
	// working directory).
	Root string
	// Baseline accepts known findings; nil accepts none.
	Baseline *Baseline
	// Claim, when set, makes the run build a claim matrix.
	Claim  *Claim
	FailOn tap.Level
}

// A Run feeds findings, frames and exchanges to every report writer as
// they stream, in bounded memory (a nil *Run takes every call and does
// nothing, for callers without reports): per input it keeps one status per
// check, the recent frames (bounded in bytes) and the distinct
// fingerprints seen (for baselines). Not safe for concurrent use.
type Run struct {
	cfg  RunConfig
	err  error // first writer error; later calls do nothing
	cur  *inputState
	ends []InputEnd

	levels    LevelCounts
	baselined int
	byCheck   map[string]*CheckCount
	seen      map[string]int // fingerprint -> occurrences, for --write-baseline and stale entries
	examples  map[string]BaselineEntry
	claim     *claimState
	// notChecked holds, per check, the first reason a session could not
	// make it; checked the checks some session could make.
	notChecked map[string]string
	checked    map[string]bool
	sessions   bool
	chains     []conduct.Chain // the conduct timeline's most recent chains
}

type inputState struct {
	in     StreamInput
	end    InputEnd
	status map[string]*CheckStatus
	// cover is, per check, the most conclusive coverage a session of the
	// input gave (rules.Coverage), and its reason; covered says a session
	// gave one.
	cover   map[string]coverage
	covered bool
	cache   frameCache
}

type coverage struct {
	state  rules.CoverState
	reason string
}

// NewRun starts a run: every writer's Begin is called.
func NewRun(cfg RunConfig) (*Run, error) {
	if cfg.Header.Tool == "" {
		cfg.Header.Tool = "ahp-tap"
	}
	if cfg.Header.Catalogue == nil {
		cfg.Header.Catalogue = rules.Catalogue
	}
	r := &Run{cfg: cfg, byCheck: map[string]*CheckCount{}, seen: map[string]int{}, examples: map[string]BaselineEntry{},
		notChecked: map[string]string{}, checked: map[string]bool{}}
	if cfg.Claim != nil {
		r.claim = newClaimState(cfg.Claim)
	}
	for _, w := range cfg.Writers {
		if err := w.Begin(&r.cfg.Header); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// StartInput begins an input named as on the command line. The previous
// input, if any, ends with no further facts.
func (r *Run) StartInput(name string) {
	if r == nil {
		return
	}
	if r.cur != nil {
		r.EndInput(InputEnd{})
	}
	in := StreamInput{Name: name, URI: artifactURI(r.cfg.Root, name)}
	st := &inputState{in: in, status: map[string]*CheckStatus{}, cover: map[string]coverage{}}
	st.end = InputEnd{Name: name, URI: in.URI}
	r.cur = st
	r.each(func(w Writer) error { return w.Input(&st.in) })
}

// Frame tells the run about a frame of the current input after the engine
// has seen it (so it is decoded), with its 1-based line in the input.
func (r *Run) Frame(f *tap.Frame, line int) {
	if r == nil {
		return
	}
	st := r.input()
	st.end.Frames++
	st.cache.put(f, line)
	r.each(func(w Writer) error {
		if tw, ok := w.(TimelineWriter); ok {
			return tw.TimelineFrame(st.in.Name, f, line)
		}
		return nil
	})
}

// Note tells the run about a transport note of the current input (an
// EOF, a process exit, a drop, an HTTP status without a body), in order
// with its frames, for the writers that show a timeline.
func (r *Run) Note(n tap.Note) {
	if r == nil {
		return
	}
	st := r.input()
	r.each(func(w Writer) error {
		if tw, ok := w.(TimelineWriter); ok {
			return tw.TimelineNote(st.in.Name, n)
		}
		return nil
	})
}

// Covered tells the run what one session of the current input could
// judge: its Facts (Session.Facts), evaluated per check against the
// catalogue (rules.Coverage). An input fed by several sessions (a capture
// of several runs) takes, per check, the most conclusive answer; the run's
// NotPossible lists the checks no session could make. Closed calls it.
func (r *Run) Covered(f tap.Facts) {
	if r == nil {
		return
	}
	for _, c := range r.cfg.Header.Catalogue {
		state, why := rules.Coverage(c, f)
		r.Cover(c.ID, state, why)
	}
}

// Cover tells the run what a judge other than a Session concluded about
// one check of the current input (the conduct timeline across the links
// of a registration judges the COND checks): exercised, not exercised
// or not checked, and why. It merges as Covered does: per input the most
// conclusive answer wins, and the run's NotPossible lists a check no
// judge could make.
func (r *Run) Cover(check string, state rules.CoverState, reason string) {
	if r == nil {
		return
	}
	st := r.input()
	st.covered, r.sessions = true, true
	if have, ok := st.cover[check]; !ok || state > have.state {
		st.cover[check] = coverage{state, reason}
	}
	if state == rules.NotChecked {
		if _, ok := r.notChecked[check]; !ok {
			r.notChecked[check] = reason
		}
	} else {
		r.checked[check] = true
	}
}

// Closed hands the run what a closed session concluded: its exchange
// records and its coverage. Every command that feeds a Session to the
// reports ends it this way (see SessionConfig).
func (r *Run) Closed(s *tap.Session) {
	if r == nil {
		return
	}
	r.Exchanges(s.Records())
	r.Covered(s.Facts())
}

// SessionConfig returns sc with its Sink and Recorder also feeding the
// run: every finding (after sc.Sink's), and every frame the session judges
// with its line in the input (line: nil or 0 when not known). Build the
// session with it, feed it, close it, then call Closed.
func (r *Run) SessionConfig(sc tap.SessionConfig, line func() int) tap.SessionConfig {
	if r == nil {
		return sc
	}
	sink := sc.Sink
	sc.Sink = tap.SinkFunc(func(f tap.Finding) {
		if sink != nil {
			sink.Write(f)
		}
		r.Findings([]tap.Finding{f})
	})
	sc.Recorder = runRecorder{next: sc.Recorder, run: r, line: line}
	return sc
}

// runRecorder hands each frame a session judges to the run (decoded
// early, which the engine's own Decode then reuses) with its line.
type runRecorder struct {
	next tap.Recorder
	run  *Run
	line func() int
}

func (rr runRecorder) Record(f *tap.Frame) {
	if rr.next != nil {
		rr.next.Record(f)
	}
	f.Decode()
	line := 0
	if rr.line != nil {
		line = rr.line()
	}
	rr.run.Frame(f, line)
}

func (rr runRecorder) RecordNote(n tap.Note) {
	if rr.next != nil {
		rr.next.RecordNote(n)
	}
	rr.run.Note(n)
}

// LineOf is the line in the current input of the frame finding f is
// about, as every report locates it (0: not known, or no frame).
func (r *Run) LineOf(f tap.Finding) int {
	if r == nil || r.cur == nil {
		return 0
	}
	if c, ok := r.cur.cache.get(f.Conn, f.Seq); ok {
		return c.line
	}
	return 0
}

// Chains hands the run the per-event chains of a conduct timeline (the
// reports' chain view); it keeps the most recent 256. The timeline's
// coverage of the COND checks goes to Cover.
func (r *Run) Chains(chains []conduct.Chain) {
	if r == nil {
		return
	}
	r.chains = append(r.chains, chains...)
	if len(r.chains) > maxRunChains {
		r.chains = r.chains[len(r.chains)-maxRunChains:]
	}
}

// maxRunChains bounds the conduct chains a run keeps for its reports.
const maxRunChains = 256

// Findings feeds findings of the current input, in the order produced.
func (r *Run) Findings(fs []tap.Finding) {
	if r == nil {
		return
	}
	st := r.input()
	for i := range fs {
		r.finding(st, fs[i])
	}
}

func (r *Run) finding(st *inputState, f tap.Finding) {
	it := Item{Input: st.in.Name, URI: st.in.URI, Finding: f}
	if c, ok := st.cache.get(f.Conn, f.Seq); ok {
		it.Line, it.Shape, it.EventType, it.Frame = c.line, c.shape, c.eventType, c.raw
	}
	it.Fingerprint = Fingerprint(f, it.Shape)
	if r.cfg.Baseline.Accepts(it.Fingerprint) {
		it.Baselined = true
		r.baselined++
	} else {
		r.levels.add(f.Level)
	}
	cc := r.byCheck[f.Check]
	if cc == nil {
		cc = &CheckCount{Check: f.Check}
		r.byCheck[f.Check] = cc
	}
	cc.add(f.Level)
	cs := st.check(f.Check)
	cs.Findings.add(f.Level)
	if !it.Baselined {
		cs.Counted.add(f.Level)
	}
	r.seen[it.Fingerprint]++
	if _, ok := r.examples[it.Fingerprint]; !ok {
		r.examples[it.Fingerprint] = BaselineEntry{Check: f.Check, Fingerprint: it.Fingerprint, Example: exampleText(&it)}
	}
	if r.claim != nil {
		r.claim.finding(&it)
	}
	r.each(func(w Writer) error { return w.Finding(&it) })
}

// Exchanges feeds exchange records of the current input.
func (r *Run) Exchanges(xs []tap.ExchangeRecord) {
	if r == nil {
		return
	}
	st := r.input()
	for i := range xs {
		x := Exchange{Input: st.in.Name, ExchangeRecord: xs[i]}
		r.each(func(w Writer) error { return w.Exchange(&x) })
	}
}

// EndInput ends the current input. end supplies what only the reader
// knows (bytes, digest).
func (r *Run) EndInput(end InputEnd) {
	if r == nil {
		return
	}
	st := r.cur
	if st == nil {
		return
	}
	r.cur = nil
	e := st.end
	if end.Bytes > 0 {
		e.Bytes = end.Bytes
	}
	if end.SHA256 != "" {
		e.SHA256 = end.SHA256
	}
	for _, c := range r.cfg.Header.Catalogue {
		cs := *st.check(c.ID)
		cv, ok := st.cover[c.ID]
		if !st.covered {
			// No session judged the input (a registration document):
			// only the checks about the audit itself apply.
			cv, ok = coverage{rules.NotExercised, "the input held no frames"}, true
			if c.Scope.By == rules.ByAnything {
				cv.state = rules.Exercised
			}
		}
		switch {
		case cs.Findings.Total() > 0:
			cs.Exercised = true
		case !ok:
		case cv.state == rules.Exercised:
			cs.Exercised = true
		default:
			cs.NotChecked = cv.state == rules.NotChecked
			cs.Reason = cv.reason
		}
		e.Checks = append(e.Checks, cs)
	}
	if r.claim != nil {
		r.claim.input(&e)
	}
	r.ends = append(r.ends, e)
}

// Close ends the run: every writer's End is called with the totals. It
// returns the End so the caller can pick the exit code (End.Failing).
func (r *Run) Close() (*End, error) {
	if r.cur != nil {
		r.EndInput(InputEnd{})
	}
	e := &End{Inputs: r.ends, Levels: r.levels, Baselined: r.baselined,
		ByCheck: sortedCounts(r.byCheck), NotPossible: r.NotPossible(), FailOn: r.cfg.FailOn, Chains: r.chains}
	e.Stale, e.StaleCount = r.cfg.Baseline.Stale(r.seen)
	if r.claim != nil {
		e.Claim = r.claim.matrix(r.ends)
	}
	r.each(func(w Writer) error { return w.End(e) })
	return e, r.err
}

// NotPossible lists the checks no session of the run could make so far,
// in catalogue order, with the first session's reason.
func (r *Run) NotPossible() []NotPossible {
	if r == nil || !r.sessions {
		return nil
	}
	var out []NotPossible
	for _, c := range r.cfg.Header.Catalogue {
		if why, ok := r.notChecked[c.ID]; ok && !r.checked[c.ID] {
			out = append(out, NotPossible{Check: c.ID, Reason: why})
		}
	}
	return out
}

// NewBaseline returns a baseline accepting every finding of the run so
// far (for --write-baseline), sorted by check then fingerprint.
func (r *Run) NewBaseline() *Baseline {
	b := &Baseline{Version: 1}
	for fp, n := range r.seen {
		ex := r.examples[fp]
		ex.Count = n
		b.Entries = append(b.Entries, ex)
	}
	sort.Slice(b.Entries, func(i, j int) bool {
		x, y := b.Entries[i], b.Entries[j]
		if x.Check != y.Check {
			return checkLess(x.Check, y.Check)
		}
		return x.Fingerprint < y.Fingerprint
	})
	return b
}

func (r *Run) input() *inputState {
	if r.cur == nil {
		r.StartInput("-")
	}
	return r.cur
}

func (r *Run) each(fn func(Writer) error) {
	if r.err != nil {
		return
	}
	for _, w := range r.cfg.Writers {
		if err := fn(w); err != nil {
			r.err = err
			return
		}
	}
}

func (st *inputState) check(id string) *CheckStatus {
	cs := st.status[id]
	if cs == nil {
		cs = &CheckStatus{Check: id}
		st.status[id] = cs
	}
	return cs
}

// Fingerprint is the stable identity of a finding across runs: a hash of
// its check, rule, JSON Pointer, event type and the shape of its frame
// (message kind, method, event type). It leaves out line numbers, times,
// sequence numbers, ids and the message text, so re-recording the same
// traffic gives the same fingerprints.
func Fingerprint(f tap.Finding, shape string) string {
	h := sha256.New()
	for _, s := range []string{f.Check, f.Rule, f.Pointer, f.Dir.String(), shape} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// FrameShape describes a decoded frame for fingerprints: its message kind,
// method and event type, and for responses the keys of result (or the
// error code).
func FrameShape(f *tap.Frame) (shape, eventType string) {
	var b strings.Builder
	switch m := f.Msg.(type) {
	case *tap.Request:
		b.WriteString("request ")
		b.WriteString(m.Method)
	case *tap.Notification:
		b.WriteString("notification ")
		b.WriteString(m.Method)
	case *tap.Response:
		if m.Error != nil {
			code, _ := m.Error.Get("code").Int()
			fmt.Fprintf(&b, "error %d", code)
		} else {
			b.WriteString("result")
			keys := slices.Clone(m.Result.Keys())
			sort.Strings(keys)
			for _, k := range keys {
				b.WriteString(" ")
				b.WriteString(k)
			}
		}
	default:
		if f.Truncated {
			return "truncated", ""
		}
		return "unparsed", ""
	}
	if t, ok := f.Event().Get("type").Text(); ok {
		eventType = t
		b.WriteString(" ")
		b.WriteString(t)
	}
	return b.String(), eventType
}

func exampleText(it *Item) string {
	loc := it.Input
	if it.Line > 0 {
		loc = fmt.Sprintf("%s:%d", it.Input, it.Line)
	}
	return fmt.Sprintf("%s: %s %s: %s", loc, it.Finding.Level, it.Finding.Check, it.Finding.Message)
}

// artifactURI is name relative to root, with forward slashes, for SARIF
// and GitHub annotations ("-" stays "-").
func artifactURI(root, name string) string {
	if name == "-" || name == "" {
		return "stdin"
	}
	p := name
	if abs, err := filepath.Abs(name); err == nil {
		base := root
		if base == "" {
			base = "."
		}
		if b, err := filepath.Abs(base); err == nil {
			if rel, err := filepath.Rel(b, abs); err == nil && !strings.HasPrefix(rel, "..") {
				p = rel
			}
		}
	}
	return filepath.ToSlash(p)
}

// frameCache remembers the frames findings can still be about: the
// last few frames (a finding is almost always about the frame just fed)
// and the requests still unanswered (end-of-stream findings: a request
// never answered, a process that exited with requests pending). Both are
// bounded: recentFrames frames, and pendingEntries requests of which the
// first pendingBytes bytes keep their frame bytes.
type frameCache struct {
	recent  [recentFrames]*cachedFrame
	next    int
	pending map[cacheKey]*cachedFrame
	bytes   int // frame bytes held by pending
}

type cacheKey struct {
	conn string
	seq  uint64
}

type cachedFrame struct {
	key       cacheKey
	line      int
	shape     string
	eventType string
	raw       []byte
}

func (c *frameCache) put(f *tap.Frame, line int) {
	raw := f.Raw
	if len(raw) > MaxItemFrame {
		raw = raw[:MaxItemFrame]
	}
	shape, et := FrameShape(f)
	e := &cachedFrame{key: cacheKey{f.Conn, f.Seq}, line: line, shape: shape, eventType: et, raw: slices.Clone(raw)}
	c.recent[c.next%recentFrames] = e
	c.next++
	if _, ok := f.Msg.(*tap.Request); ok {
		if c.pending == nil {
			c.pending = map[cacheKey]*cachedFrame{}
		}
		if len(c.pending) >= pendingEntries {
			return
		}
		p := *e
		if c.bytes+len(raw) > pendingBytes {
			p.raw = nil
		}
		c.bytes += len(p.raw)
		c.pending[e.key] = &p
	}
}

// answered forgets a request once its exchange is complete.
func (c *frameCache) answered(conn string, seq uint64) {
	k := cacheKey{conn, seq}
	if e, ok := c.pending[k]; ok {
		c.bytes -= len(e.raw)
		delete(c.pending, k)
	}
}

func (c *frameCache) get(conn string, seq uint64) (*cachedFrame, bool) {
	if seq == 0 {
		return nil, false
	}
	k := cacheKey{conn, seq}
	for i := 1; i <= recentFrames && i <= c.next; i++ {
		if e := c.recent[(c.next-i)%recentFrames]; e != nil && e.key == k {
			return e, true
		}
	}
	e, ok := c.pending[k]
	return e, ok
}

// writeAll writes s to w, for writers building output from strings.
func writeAll(w io.Writer, s string) error {
	_, err := io.WriteString(w, s)
	return err
}

// Fed hands the run what an engine made of one frame: the frame (with its
// line in the input), the findings, and the exchange the frame completed,
// if it answered a request. Commands call it right after Engine.Feed, so
// the timeline streams as exchanges complete instead of being read from
// the conversation's bounded history at the end.
func (r *Run) Fed(c *tap.Conversation, f *tap.Frame, line int, fs []tap.Finding) {
	if r == nil {
		return
	}
	r.Frame(f, line)
	r.Findings(fs)
	if _, ok := f.Msg.(*tap.Response); ok {
		// The conversation keeps a summary of an answered exchange's
		// frames (Exchange.settle), so match the response by its place.
		if x := c.Exchange(); x != nil && x.Response != nil && x.Response.Seq == f.Seq && x.Response.Conn == f.Conn {
			if x.Request != nil {
				r.input().cache.answered(x.Request.Conn, x.Request.Seq)
			}
			r.Exchanges([]tap.ExchangeRecord{ExchangeOf(x)})
		}
	}
}

// Finished hands the run an engine's end-of-stream findings and the
// exchanges still unanswered.
func (r *Run) Finished(c *tap.Conversation, fs []tap.Finding) {
	if r == nil {
		return
	}
	r.Findings(fs)
	var xs []tap.ExchangeRecord
	for _, x := range c.Pending() {
		xs = append(xs, ExchangeOf(x))
	}
	r.Exchanges(xs)
}

// ExchangeOf is the record of one exchange, as Conversation.Records
// gives it.
func ExchangeOf(x *tap.Exchange) tap.ExchangeRecord {
	r := tap.ExchangeRecord{Method: x.Method, Outcome: x.Outcome, Edit: x.Edit}
	r.EventType, _ = x.Event.Get("type").Text()
	r.EventID, _ = x.Event.Get("id").Text()
	if f := x.Request; f != nil {
		r.Conn, r.RequestSeq, r.RPCID = f.Conn, f.Seq, tap.IDText(f.RPCID())
	}
	if f := x.Response; f != nil {
		r.ResponseSeq = f.Seq
		if r.RPCID == "" {
			r.Conn, r.RPCID = f.Conn, tap.IDText(f.RPCID())
		}
		if x.Request != nil && !f.Time.IsZero() && !x.Request.Time.IsZero() {
			r.LatencyMs = float64(f.Time.Sub(x.Request.Time).Microseconds()) / 1000
		}
	}
	if r.Outcome == "" && x.Response == nil {
		r.Outcome = tap.OutcomeUnanswered
	}
	return r
}
