package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/har"
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
	direction := fs.String("direction", "", "for plain NDJSON input: every line was sent by `harness` or backend (default: guess per line)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := of.validate(); err != nil {
		return err
	}
	var dir tap.Direction
	if *direction != "" {
		d, err := tap.ParseDirection(*direction)
		if err != nil {
			return usageError("--direction: %v", err)
		}
		dir = d
	}
	if *input != "" && *input != "har" {
		return usageError("--input %q is not har", *input)
	}
	if fs.NArg() == 0 {
		return usageError("replay: no CAPTURE given (usage: ahp-tap replay [flags] CAPTURE...)")
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
	if err := of.openLog("replay", m.diag()); err != nil {
		return err
	}
	defer of.lg.Close() // idempotent; flushes on the error paths too
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	rs, err := rf.open(m, of.format, set["format"], &ef)
	if err != nil {
		return err
	}
	defer rs.close()
	run, err := rs.newRun(l.cfg.Snapshot, of.threshold)
	if err != nil {
		return usageError("replay: %v", err)
	}
	rp := &replayer{flags: l, set: set, dir: dir, input: *input, diag: m.diag(), ctx: ctx, run: run}

	var sources []report.Source
	if ef.registration != "" {
		if fds := l.registrationFindings(); len(fds) > 0 {
			sources = append(sources, report.Source{Name: ef.registration, Findings: fds})
		}
	}
	ic := &inputChecker{m: m, cmd: "replay", flags: l, rp: rp, allowEmpty: of.allowEmpty, bar: !rf.quiet && isTerminal(m.Stderr)}
	for _, name := range fs.Args() {
		// Issue 8 item 5: a SIGINT/SIGTERM stops the replay with what the
		// inputs read so far gave; a read that blocks is abandoned.
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
	if sig, ok := interruption(ctx); ok {
		err := m.finishReports("replay", &of, &rf, rs, run, sources, nil)
		if ee, isExit := err.(*exitError); err != nil && (!isExit || ee.code == 2) {
			return err
		}
		return interruptedError(sig, "replay")
	}
	return m.finishReports("replay", &of, &rf, rs, run, sources, rp.notPossible())
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
	// har is what the last HAR replayed held (replayHAR).
	har *har.Stats
	// notChecked holds what every session replayed so far could not
	// check (the first one's reasons); sessions says whether there was
	// one. Kept as it goes, so that memory does not grow with the
	// sessions (a per_event capture has one per event).
	notChecked []tap.NotChecked
	sessions   bool
}

// interrupted reports whether a SIGINT/SIGTERM asked the replay to stop.
func (rp *replayer) interrupted() bool { return rp.ctx != nil && rp.ctx.Err() != nil }

// notPossible lists the checks that no session replayed could make (with
// the first session's reason).
func (rp *replayer) notPossible() []report.NotPossible {
	return notPossible(rp.notChecked)
}

// intersectNotChecked keeps of have what next lists too (by check): the
// checks no session could make, with the first session's reasons.
func intersectNotChecked(have, next []tap.NotChecked) []tap.NotChecked {
	return slices.DeleteFunc(have, func(nc tap.NotChecked) bool {
		return !slices.ContainsFunc(next, func(o tap.NotChecked) bool { return o.Check == nc.Check })
	})
}

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
	return tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(rp.flags.opt),
		Sink:                 tap.SinkFunc(func(f tap.Finding) { *out = append(*out, f); rp.run.Findings([]tap.Finding{f}) }),
		Recorder:             frameCounter{&rp.frames, rp.run, rp.line, rp.progress},
		RegistrationReported: cfg.Registration != nil && cfg.Registration == rp.flags.cfg.Registration,
		SharedEvents:         sharedEvents,
		// As the live taps cap theirs (issue 8 item 9): a longer line is
		// audited as a prefix (TAP-1) and the rest streams past.
		MaxLine: maxReplayLine})
}

// close closes the sessions of a file, in order, and keeps what they
// concluded.
func (rp *replayer) close(sessions []*tap.Session) {
	for _, s := range sessions {
		s.Close()
		recs := s.Records()
		rp.keepRecords(recs)
		rp.run.Exchanges(recs)
		rp.forgotten += s.Forgotten()
		if !rp.sessions {
			rp.notChecked, rp.sessions = s.NotChecked(), true
		} else {
			rp.notChecked = intersectNotChecked(rp.notChecked, s.NotChecked())
		}
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
	stores := capture.NewStores()
	cr.Damaged = rp.damaged
	rp.line = cr.Line // a frame's line in the capture, for the reports
	defer func() { rp.line = nil }()
	err := capture.Replay(cr, func(h *capture.Header) (*tap.Session, error) {
		cfg, err := rp.config(h)
		if err != nil {
			return nil, err
		}
		cfg.Events = stores.For(h)
		return rp.session(cfg, &out, h.State != ""), nil
	}, func(s *tap.Session) { rp.close([]*tap.Session{s}) })
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

// frameCounter is a tap.Recorder that counts the frames a session audits.
// It also hands each frame to the --report run (decoded early, which the
// engine's own Decode then reuses) with its line in the input, when line
// knows it (nil or 0: not known, as for HAR entries).
type frameCounter struct {
	n        *int
	run      *report.Run
	line     func() int
	progress *progress // nil: no bar
}

func (c frameCounter) Record(f *tap.Frame) {
	*c.n++
	c.progress.frame()
	if c.run != nil {
		f.Decode()
		line := 0
		if c.line != nil {
			line = c.line()
		}
		c.run.Frame(f, line)
	}
}
func (c frameCounter) RecordNote(tap.Note) {}

// config builds the engine configuration of a capture segment: the live
// run's settings from its header, overridden by flags given explicitly.
func (rp *replayer) config(h *capture.Header) (tap.Config, error) {
	cfg := rp.flags.cfg
	cfg.Transport = h.Transport
	if h.Snapshot != "" && !rp.set["protocol-version"] {
		cfg.Snapshot = h.Snapshot
	}
	if h.TimeoutMs > 0 && !rp.set["timeout"] {
		cfg.Timeout = time.Duration(h.TimeoutMs) * time.Millisecond
	}
	if len(h.RegistrationDoc) > 0 && !rp.set["registration"] {
		reg, _, err := tap.ParseJSON(h.RegistrationDoc)
		if err != nil {
			return cfg, fmt.Errorf("header registrationDoc is not JSON: %v", err)
		}
		cfg.Registration = reg
		if !rp.set["hook"] {
			cfg.HookID = h.Hook
		}
	}
	if h.Lifecycle != "" {
		cfg.Lifecycle = h.Lifecycle
	}
	return cfg, nil
}
