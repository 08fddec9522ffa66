package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"slices"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/conduct"
	"github.com/ahp-tap/ahp-tap/har"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// runReplay re-checks recorded traffic: ahp-tap captures, or plain NDJSON
// streams. Exit 1 when a finding at or above --fail-on exists.
func (m *Main) runReplay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	var ef engineFlags
	ef.register(fs)
	var of offlineFlags
	of.register(fs)
	var otlpf otlpFlags
	otlpf.register(fs)
	var rf reportFlags
	rf.register(fs)
	input := fs.String("input", "", "input `KIND`: har for an HTTP Archive (default: recognised by content)")
	conductMode := fs.String("conduct", "auto", "judge the harness's conduct across the captures of one registration's backends: `auto` (when the registration has several hooks), on or off (docs/conduct.md)")
	skew := fs.Duration("conduct-skew", conduct.DefaultSkew, "clock tolerance between the captures of different links: facts closer than this are simultaneous")
	direction := fs.String("direction", "", "for plain NDJSON input: every line was sent by `harness` or backend (default: guess per line); refused for a capture or HAR, which record each sender")
	var selects []capture.SelectTerm
	fs.Func("select", "with --write-capture: keep the exchanges matching `EXPR` (key=value,... with keys check, event, conn, id, from, to; comma is and, a repeated --select is or)", func(v string) error {
		t, err := capture.ParseSelect(v)
		selects = append(selects, t)
		return err
	})
	writeCapture := fs.String("write-capture", "", "write the exchanges --select keeps to a new capture `FILE` (mode 0600)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	dir, err := checkReplayFlags(len(selects) > 0, *writeCapture != "", *direction, *input, *conductMode, *skew, fs.NArg())
	if err != nil {
		return err
	}
	if err := of.validate(); err != nil {
		return err
	}
	names, err := expandInputs(fs.Args())
	if err != nil {
		return usageError("replay: %v", err)
	}
	l, err := ef.load()
	if err != nil {
		return err
	}
	otlpx, err := otlpf.open("", m.Stderr)
	if err != nil {
		return err
	}
	of.otlpx = otlpx
	if err := refuseInputsAsOutputs(&rf, &of, ef.registration, fs.Args()); err != nil {
		return err
	}
	selected, err := m.createSelected(*writeCapture, append([]string{ef.registration}, fs.Args()...))
	if err != nil {
		return err
	}
	if selected != nil {
		defer selected.Close() // closed by writeSelected; idempotent on the error paths
	}
	if err := of.openLog("replay", m.diag()); err != nil {
		return err
	}
	defer of.lg.Close() // idempotent; flushes on the error paths too
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	rs, err := rf.open(m, of.format, set["format"], &ef, l.cfg.Snapshot, of.threshold)
	if err != nil {
		return err
	}
	defer rs.Close()
	run := rs.Run()
	rp := &replayer{flags: l, set: set, dir: dir, input: *input, diag: m.diag(), ctx: ctx, run: run}

	ic := &inputChecker{m: m, cmd: "replay", flags: l, rp: rp, allowEmpty: of.allowEmpty, bar: !rf.quiet && isTerminal(m.Stderr)}
	sources := replayInputs(ctx, ic, names, ef.registration)
	if _, ok := interruption(ctx); ok {
		return m.finishInterrupted(ctx, &of, rs, sources)
	}
	if *conductMode != "off" {
		if src := rp.conductSource(m, names, *skew, *conductMode == "on"); src != nil {
			sources = append(sources, *src)
		}
	}
	if *writeCapture != "" {
		if err := m.writeSelected(rp, selected, *writeCapture, selects, fs.Args()); err != nil {
			return err
		}
	}
	return m.finishReports("replay", &of, rs, sources)
}

// finishInterrupted ends a replay a SIGINT/SIGTERM stopped: the reports of
// what was read, and the exit of the signal unless the reports failed.
func (m *Main) finishInterrupted(ctx context.Context, of *offlineFlags, rs *output.Reports, sources []report.Source) error {
	sig, _ := interruption(ctx)
	err := m.finishReports("replay", of, rs, sources)
	if ee, isExit := err.(*exitError); err != nil && (!isExit || ee.code == 2) {
		return err
	}
	return interruptedError(sig, "replay")
}

// checkReplayFlags checks the values of replay's own flags (exit 2 with a
// one-line reason for a bad one) and returns --direction's.
func checkReplayFlags(selects, writeCapture bool, direction, input, conductMode string, skew time.Duration, nArgs int) (tap.Direction, error) {
	var dir tap.Direction
	if selects != writeCapture {
		return dir, usageError("--select and --write-capture go together")
	}
	if direction != "" {
		d, err := tap.ParseDirection(direction)
		if err != nil {
			return dir, usageError("--direction: %v", err)
		}
		dir = d
	}
	if input != "" && input != "har" {
		return dir, usageError("--input %q is not har", input)
	}
	if nArgs == 0 {
		return dir, usageError("replay: no CAPTURE given (usage: ahp-tap replay [flags] CAPTURE...)")
	}
	if conductMode != "auto" && conductMode != "on" && conductMode != "off" {
		return dir, usageError("--conduct %q is not auto, on or off", conductMode)
	}
	if skew < 0 {
		return dir, usageError("--conduct-skew must not be negative")
	}
	return dir, nil
}

// replayInputs checks every input in turn (the registration first, when
// given, with its own findings), each one a report source. Issue 8 item
// 5: a SIGINT/SIGTERM stops the replay with what the inputs read so far
// gave; a read that blocks is abandoned.
func replayInputs(ctx context.Context, ic *inputChecker, names []string, registration string) []report.Source {
	var sources []report.Source
	if registration != "" {
		if fds := ic.flags.registrationFindings(); len(fds) > 0 {
			sources = append(sources, report.Source{Name: registration, Findings: fds})
		}
	}
	run := ic.rp.run
	for _, name := range names {
		run.StartInput(name)
		src, ok := checkInterruptibly(ctx, func() report.Source { return ic.check(name) })
		run.EndInput(inputEnd(src))
		if !ok {
			break
		}
		sources = append(sources, src)
		if ctx.Err() != nil {
			break
		}
	}
	return sources
}

// errInterrupted ends the replay of a file when a SIGINT/SIGTERM arrived;
// the findings so far are kept.
var errInterrupted = errors.New("interrupted")

// maxReplayLine caps the audited prefix of one line of a replayed stream,
// as the live taps cap theirs (issue 8 item 9): a longer line is audited
// as a truncated prefix (TAP-1) and the rest streams past.
const maxReplayLine = stdio.DefaultMaxAuditLine

// A replayer re-runs the rules over one recorded file at a time.
type replayer struct {
	flags *loaded         // what the command-line flags say
	set   map[string]bool // flags given explicitly: they override the capture
	dir   tap.Direction   // --direction, for plain NDJSON
	input string          // --input: "har", or "" to recognise by content
	diag  io.Writer       // one-line notices (stderr)
	run   *report.Run     // the --report writers (nil: none)
	ctx   context.Context // ends on SIGINT/SIGTERM: stop with what was read

	// records collects the exchange records of the file being replayed,
	// frames counts its frames, forgotten the exchanges its conversations
	// no longer hold.
	records   []tap.ExchangeRecord
	frames    int
	forgotten int
	// damaged, when set, is told of each capture record that cannot be
	// read; the replay goes on with the next. When nil, it stops.
	damaged func(*capture.LineError)
	// line, when set, is the input line of the frame being recorded.
	line func() int
	// progress is the progress bar of the input being replayed, or nil.
	progress *progress
	// lines holds the input line of each finding of the input, in the
	// order of its findings (0: not known), for the text report.
	lines []int
	// har is what the last HAR replayed held (replayHAR).
	har *har.Stats
}

// interrupted reports whether a SIGINT/SIGTERM asked the replay to stop.
func (rp *replayer) interrupted() bool { return rp.ctx != nil && rp.ctx.Err() != nil }

// maxReplayExchanges caps the exchange records a replay keeps per input
// for the reports (each conversation keeps its most recent answered
// ones): a capture of many segments, one per event, would otherwise hold
// a record per event to the end. The oldest go first and are counted as
// omitted.
const maxReplayExchanges = 8 * tap.DefaultKeepAnswered

// keepRecords adds a session's exchange records, keeping the most recent
// maxReplayExchanges.
func (rp *replayer) keepRecords(recs []tap.ExchangeRecord) {
	rp.records = append(rp.records, recs...)
	if over := len(rp.records) - maxReplayExchanges; over > maxReplayExchanges/4 {
		rp.forgotten += over
		rp.records = slices.Clone(rp.records[over:])
	}
}

// session builds the session of one replayed file or capture segment.
// The --registration document's own findings are listed under its file
// name, not again here; a registration a capture embeds is judged by the
// session of each segment, as each live run did.
func (rp *replayer) session(cfg tap.Config, out *[]tap.Finding, sharedEvents bool) *tap.Session {
	sc := rp.sessionConfig(cfg, out)
	sc.SharedEvents = sharedEvents
	return tap.NewSession(rp.run.SessionConfig(sc, rp.lineOf))
}

// sessionConfig is the configuration of a replayed session: the rules of
// the flags, its findings appended to out, its frames counted.
func (rp *replayer) sessionConfig(cfg tap.Config, out *[]tap.Finding) tap.SessionConfig {
	return tap.SessionConfig{Config: cfg, Rules: rules.Set(rp.flags.opt),
		Sink: tap.SinkFunc(func(f tap.Finding) {
			*out = append(*out, f)
			rp.lines = append(rp.lines, rp.run.LineOf(f))
		}),
		Recorder:             frameCounter{&rp.frames, rp.progress},
		RegistrationReported: cfg.Registration != nil && cfg.Registration == rp.flags.cfg.Registration,
		// As the live taps cap theirs (issue 8 item 9): a longer line is
		// audited as a prefix (TAP-1) and the rest streams past.
		MaxLine: maxReplayLine}
}

// lineOf is the input line of the frame being recorded (0: not known).
func (rp *replayer) lineOf() int {
	if rp.line == nil {
		return 0
	}
	return rp.line()
}

// close closes the sessions of a file, in order, and keeps what they
// concluded.
func (rp *replayer) close(sessions []*tap.Session) {
	for _, s := range sessions {
		s.Close()
		rp.keepRecords(s.Records())
		rp.run.Closed(s)
		rp.forgotten += s.Forgotten()
	}
}

// checkInterruptibly runs check and returns what it gave, or, when ctx
// ends first (SIGINT/SIGTERM), what it gives within a second of that: a
// replay notices the signal between reads; a read that blocks is
// abandoned (ok false).
func checkInterruptibly(ctx context.Context, check func() report.Source) (report.Source, bool) {
	done := make(chan report.Source, 1)
	go func() { done <- check() }()
	select {
	case src := <-done:
		return src, true
	case <-ctx.Done():
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case src := <-done:
		return src, true
	case <-t.C:
		return report.Source{}, false
	}
}

// replayStream checks a plain NDJSON stream as stdio traffic. A stream from
// one side only (--direction) is an excerpt: a request without its
// response is no finding. Without --direction each line's sender is
// guessed (tap.GuessDirection).
// With excerpt (check), the stream is an excerpt whichever it is.
func (rp *replayer) replayStream(r io.Reader, excerpt bool) ([]tap.Finding, error) {
	cfg := rp.flags.cfg
	cfg.Transport = tap.Stdio
	cfg.Partial = rp.dir != 0 || excerpt
	var out []tap.Finding
	first := rp.frames
	rp.line = func() int { return rp.frames - first } // frame N of a stream is its line N
	defer func() { rp.line = nil }()
	s := rp.session(cfg, &out, true)
	buf := make([]byte, 1<<16)
	for {
		if rp.interrupted() {
			s.Close()
			return out, errInterrupted
		}
		n, err := r.Read(buf)
		s.Stream("", rp.dir, time.Time{}, buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			if rp.interrupted() {
				s.Close()
				return out, errInterrupted
			}
			return nil, err
		}
	}
	rp.close([]*tap.Session{s})
	return out, nil
}

// replayCapture feeds a capture through one session per segment, each
// configured as the live run that wrote it was (its header), unless a
// flag says otherwise. Segments that shared a --state directory live share
// one event store (retries judged across processes); any other segment
// has one of its own, as its live run had (issue 21 item 2). Each
// segment's session is closed as soon as the segment is complete.
func (rp *replayer) replayCapture(cr *capture.Reader) ([]tap.Finding, error) {
	var out []tap.Finding
	cr.Damaged = rp.damaged
	err := rp.run.Replay(cr, func(h *capture.Header) (tap.SessionConfig, error) {
		cfg, err := h.Config(rp.flags.cfg, overridesOf(rp.set))
		if err != nil {
			return tap.SessionConfig{}, err
		}
		return rp.sessionConfig(cfg, &out), nil
	}, func(s *tap.Session) {
		rp.keepRecords(s.Records())
		rp.forgotten += s.Forgotten()
	})
	if err != nil {
		if rp.interrupted() {
			// A signal closed the file under the reader: keep what
			// the segments found so far.
			return out, errInterrupted
		}
		return nil, err
	}
	return out, nil
}

// overridesOf says which capture header settings the flags given
// explicitly override.
func overridesOf(set map[string]bool) capture.Overrides {
	return capture.Overrides{Snapshot: set["protocol-version"], Timeout: set["timeout"],
		Registration: set["registration"], Hook: set["hook"]}
}

// frameCounter is a tap.Recorder that counts the frames a session audits
// and moves the progress bar.
type frameCounter struct {
	n        *int
	progress *progress // nil: no bar
}

func (c frameCounter) Record(f *tap.Frame) {
	*c.n++
	c.progress.frame()
}
func (c frameCounter) RecordNote(tap.Note) {}

// checkMessagePrefix checks a message document larger than the audit cap
// from its first bytes, the whole being size bytes: it is audited as a
// truncated copy (TAP-1), as the taps audit a frame past their cap (issue
// 28 item 5).
func (rp *replayer) checkMessagePrefix(prefix []byte, size int64) ([]tap.Finding, []tap.ExchangeRecord) {
	cfg := rp.flags.cfg
	cfg.Partial = true
	cfg.Transport = tap.File
	var out []tap.Finding
	rp.records, rp.frames, rp.forgotten = nil, 0, 0
	rp.line = func() int { return rp.frames }
	defer func() { rp.line = nil }()
	s := rp.session(cfg, &out, true)
	s.Frame(&tap.Frame{Transport: tap.File, Raw: prefix, Truncated: true, Size: int(size)})
	rp.close([]*tap.Session{s})
	return out, rp.records
}

// checkDocument checks one standalone document (check): a message is one
// frame on no transport, a stream goes through the stdio framing rules, a
// registration is judged as in §5. A document is an excerpt of a link: a
// request without its response is no finding. It goes through a session
// like every replayed input, so its reports say the same per check.
func (rp *replayer) checkDocument(kind rules.DocKind, data []byte) ([]tap.Finding, []tap.ExchangeRecord) {
	cfg := rp.flags.cfg
	cfg.Partial = true
	var out []tap.Finding
	switch kind {
	case rules.DocRegistration:
		reg, _, _ := tap.ParseJSON(data)
		out = rules.Set(rp.flags.opt).Registration(reg, cfg.Resolved().Snapshot)
		rp.run.Findings(out)
		return out, nil
	case rules.DocStream:
		cfg.Transport = tap.Stdio
	default:
		cfg.Transport = tap.File
	}
	rp.records, rp.frames, rp.forgotten = nil, 0, 0
	rp.line = func() int { return rp.frames } // frame N of a document is its line N
	defer func() { rp.line = nil }()
	s := rp.session(cfg, &out, true)
	if kind == rules.DocStream {
		s.Stream("", 0, time.Time{}, data)
	} else {
		s.Frame(&tap.Frame{Transport: tap.File, Raw: data})
	}
	rp.close([]*tap.Session{s})
	return out, rp.records
}
