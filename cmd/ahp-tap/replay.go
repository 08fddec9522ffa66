package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
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
	logPath := fs.String("log", "", "also append findings to the violation log at `PATH` (- for stderr)")
	format := fs.String("format", "text", "output format: text or json")
	failOn := fs.String("fail-on", "error", "exit 1 when a finding at or above this level exists: error, warn, info or never")
	var otlpf otlpFlags
	otlpf.register(fs)
	input := fs.String("input", "", "input `KIND`: har for an HTTP Archive (default: recognised by content)")
	direction := fs.String("direction", "", "for plain NDJSON input: every line was sent by `harness` or backend (default: guess per line)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	var threshold tap.Level // 0: never fail
	if *failOn != "never" {
		lvl, err := tap.ParseLevel(*failOn)
		if err != nil {
			return usageError("--fail-on %q is not error, warn, info or never", *failOn)
		}
		threshold = lvl
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
	var lg *report.Log
	if *logPath != "" {
		// Opened before the work, so a bad path fails fast.
		if lg, err = report.OpenLog(*logPath, m.diag()); err != nil {
			return usageError("replay: %v", err)
		}
		defer lg.Close() // idempotent; flushes on the error paths too
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	rp := &replayer{flags: l, set: set, dir: dir, input: *input, diag: m.diag(), ctx: ctx}

	var sources []report.Source
	if ef.registration != "" {
		fds := append(l.regFindings, l.opt.Spec.RegistrationFindings(l.cfg.Registration)...)
		if len(fds) > 0 {
			sources = append(sources, report.Source{Name: ef.registration, Findings: fds})
		}
	}
	for _, name := range fs.Args() {
		rp.records = nil
		fds, err := m.replayFileInterruptibly(rp, name)
		if err == errAbandoned {
			break
		}
		if err != nil && err != errInterrupted {
			return usageError("replay %s: %v", name, err)
		}
		sources = append(sources, report.Source{Name: name, Findings: fds, Exchanges: rp.records})
		if err == errInterrupted {
			break // issue 8 item 5: stop with what we have
		}
	}
	for _, src := range sources {
		for _, f := range src.Findings {
			lg.WriteWait(f) // offline: wait rather than drop; a nil log (no --log) discards
		}
	}
	sources = exportSources(otlpx, sources, lg)
	if err := lg.Close(); err != nil {
		fmt.Fprintf(m.Stderr, "ahp-tap: closing the log: %v\n", err)
	}
	sum := report.SummaryOf(sources)
	if _, ok := interruption(ctx); !ok {
		sum.NotPossible = rp.notPossible()
	}
	if err := writeReport(m.Stdout, *format, sources, sum); err != nil {
		return usageError("replay: writing the report: %v", err)
	}
	if sig, ok := interruption(ctx); ok {
		return interruptedError(sig, "replay")
	}
	if threshold != 0 && sum.Levels.AtLeast(threshold) > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// errInterrupted ends the replay of a file when a SIGINT/SIGTERM arrived;
// the findings so far are kept.
var errInterrupted = errors.New("interrupted")

// errAbandoned: interrupted while a read blocked; the file's findings are
// lost.
var errAbandoned = errors.New("interrupted during a read")

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
	ctx   context.Context // ends on SIGINT/SIGTERM: stop with what was read

	// records collects the exchange records of the file being replayed.
	records []tap.ExchangeRecord

	// What the replayed segments were judged with, for the summary.
	hadRegistration, hadHook, hadDeadline bool
}

// interrupted reports whether a SIGINT/SIGTERM asked the replay to stop.
func (rp *replayer) interrupted() bool { return rp.ctx != nil && rp.ctx.Err() != nil }

// notPossible lists the checks no replayed segment had what they need for.
func (rp *replayer) notPossible() []report.NotPossible {
	var out []report.NotPossible
	if !rp.hadRegistration {
		out = append(out, report.NotPossible{Check: "BASE-5",
			Reason: "no registration: give --registration FILE --hook ID, or capture with them"})
	} else if !rp.hadHook {
		out = append(out, report.NotPossible{Check: "BASE-5",
			Reason: "no hook selected: give --hook ID to check dispatch against its subscriptions"})
	}
	if !rp.hadDeadline {
		out = append(out, report.NotPossible{Check: "CORR-3",
			Reason: "no deadline: give --timeout, or a registration whose subscriptions set timeoutMs"})
	}
	return out
}

// note records what a segment's configuration makes possible.
func (rp *replayer) note(cfg tap.Config) {
	rp.hadRegistration = rp.hadRegistration || cfg.Registration != nil
	rp.hadHook = rp.hadHook || cfg.HookID != ""
	rp.hadDeadline = rp.hadDeadline || cfg.Timeout > 0 || cfg.HookID != ""
}

// replayFileInterruptibly replays the named file, returning soon after a
// SIGINT/SIGTERM ends rp.ctx: the replay notices between reads and keeps
// what it found; a read that blocks (a pipe that never ends) is abandoned
// after a moment, with the file's findings.
func (m *Main) replayFileInterruptibly(rp *replayer, name string) ([]tap.Finding, error) {
	type result struct {
		fds []tap.Finding
		err error
	}
	done := make(chan result, 1)
	go func() {
		fds, err := m.replayFile(rp, name)
		done <- result{fds, err}
	}()
	select {
	case r := <-done:
		return r.fds, r.err
	case <-rp.ctx.Done():
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case r := <-done:
		return r.fds, errInterrupted
	case <-t.C:
		return nil, errAbandoned // rp is still the goroutine's: not to be read
	}
}

// replayFile replays the named file ("-": standard input).
func (m *Main) replayFile(rp *replayer, name string) ([]tap.Finding, error) {
	if name == "-" {
		return rp.replay(m.Stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A signal interrupts a read that waits (a FIFO, a pipe that never
	// ends): closing a pollable file ends its Read.
	if rp.ctx != nil {
		stop := context.AfterFunc(rp.ctx, func() { f.Close() })
		defer stop()
	}
	return rp.replay(f)
}

// replay returns the findings of one capture or NDJSON stream. It reads
// as it goes: memory holds one record (or line) at a time, not the file.
func (rp *replayer) replay(r io.Reader) ([]tap.Finding, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if rp.isHAR(br) {
		return rp.replayHAR(br)
	}
	// The first line that is not blank says what the file is. It is read
	// up to maxReplayLine: a longer one (replay /dev/zero) is no capture
	// header, and the stream reader caps it.
	var head []byte
	for len(head) <= maxReplayLine {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 || err != nil {
			if err != nil && err != io.EOF {
				return nil, err
			}
			break
		}
	}
	all := io.MultiReader(bytes.NewReader(head), br)
	if !capture.IsHeader(head) {
		return rp.replayStream(all)
	}
	return rp.replayCapture(capture.NewReader(all))
}

// replayStream checks a plain NDJSON stream as stdio traffic. A stream from
// one side only (--direction) is an excerpt: a request without its
// response is no finding. Without --direction each line's sender is
// guessed (rules.GuessDirection).
func (rp *replayer) replayStream(r io.Reader) ([]tap.Finding, error) {
	cfg := rp.flags.cfg
	cfg.Transport = tap.Stdio
	cfg.Partial = rp.dir != 0
	rp.note(cfg)
	e := tap.NewEngine(cfg, rules.Default(rp.flags.opt))
	var out []tap.Finding
	s := tap.Splitter{Max: maxReplayLine, Emit: func(line []byte, fr tap.Framing, size int, truncated bool) {
		if truncated {
			line = line[:min(len(line), 4<<10)] // as the live taps keep it
		}
		f := &tap.Frame{Dir: rp.dir, Transport: tap.Stdio, Raw: bytes.Clone(line), Framing: fr, Size: size, Truncated: truncated}
		if f.Dir == 0 {
			f.Dir = rules.GuessDirection(f)
		}
		out = append(out, e.Feed(f)...)
	}}
	buf := make([]byte, 1<<16)
	for {
		if rp.interrupted() {
			s.Close()
			return out, errInterrupted
		}
		n, err := r.Read(buf)
		s.Write(buf[:n])
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
	s.Close()
	out = append(out, e.Finish()...)
	rp.records = append(rp.records, e.Conversation().Records()...)
	return out, nil
}

// replayCapture feeds a capture's frames and notes, in file order, through
// the rules configured as the live run was (its header), unless a flag
// says otherwise. Each header starts a segment: one live run of ahp-tap.
// On stdio every process (the conn of its frames) had an engine of its own
// and per-event processes shared an event store (--state), so frames and
// notes go to the engine of their conn, all sharing one event store. On
// HTTP a segment is one proxy run with one engine.
func (rp *replayer) replayCapture(cr *capture.Reader) ([]tap.Finding, error) {
	var (
		out     []tap.Finding
		engines = map[string]*tap.Engine{} // stdio: by conn
		order   []*tap.Engine              // every engine in creation order, for Finish
		seg     *segment                   // the latest header's segment
		events  = &tap.MemoryStore{}
		regSeen = map[string]bool{} // registration documents already judged
	)
	engineFor := func(conn string) *tap.Engine {
		if seg == nil {
			// No header before this record (cannot happen: Read
			// insists on one); judge with the flags alone.
			seg = &segment{cfg: rp.flags.cfg}
			seg.cfg.Events = events
		}
		if seg.cfg.Transport == tap.Stdio && conn != "" {
			if e, ok := engines[conn]; ok {
				return e
			}
			e := tap.NewEngine(seg.cfg, rules.Default(rp.flags.opt))
			engines[conn] = e
			order = append(order, e)
			return e
		}
		if seg.engine == nil {
			seg.engine = tap.NewEngine(seg.cfg, rules.Default(rp.flags.opt))
			order = append(order, seg.engine)
		}
		return seg.engine
	}
	for {
		if rp.interrupted() {
			return out, errInterrupted
		}
		it, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if rp.interrupted() {
				return out, errInterrupted
			}
			return nil, err
		}
		switch {
		case it.Header != nil:
			cfg, regFindings, err := rp.config(it.Header)
			if err != nil {
				return nil, fmt.Errorf("capture line %d: %w", it.Line, err)
			}
			// The registration's own findings, once per document.
			if k := string(it.Header.RegistrationDoc); k != "" && !regSeen[k] {
				regSeen[k] = true
				out = append(out, regFindings...)
			}
			cfg.Events = events
			rp.note(cfg)
			seg = &segment{cfg: cfg}
		case it.Frame != nil:
			e := engineFor(it.Frame.Conn)
			out = append(out, e.Feed(it.Frame)...)
		case it.Note != nil:
			out = append(out, engineFor(it.Note.Conn).Note(*it.Note)...)
		}
	}
	for _, e := range order {
		out = append(out, e.Finish()...)
		rp.records = append(rp.records, e.Conversation().Records()...)
	}
	return out, nil
}

// A segment is the part of a capture written by one live run.
type segment struct {
	cfg    tap.Config
	engine *tap.Engine // the HTTP (or conn-less) engine, created on first use
}

// config builds the engine configuration of a capture segment: the live
// run's settings from its header, overridden by flags given explicitly.
func (rp *replayer) config(h *capture.Header) (tap.Config, []tap.Finding, error) {
	cfg := rp.flags.cfg
	cfg.Transport = h.Transport
	if h.Snapshot != "" && !rp.set["protocol-version"] {
		cfg.Snapshot = h.Snapshot
	}
	if h.TimeoutMs > 0 && !rp.set["timeout"] {
		cfg.Timeout = time.Duration(h.TimeoutMs) * time.Millisecond
	}
	var regFindings []tap.Finding
	if len(h.RegistrationDoc) > 0 && !rp.set["registration"] {
		reg, _, err := tap.ParseJSON(h.RegistrationDoc)
		if err != nil {
			return cfg, nil, fmt.Errorf("header registrationDoc is not JSON: %v", err)
		}
		cfg.Registration = reg
		regFindings = append(rules.RegistrationFindingsFor(reg, cfg.Snapshot), rp.flags.opt.Spec.RegistrationFindings(reg)...)
		if !rp.set["hook"] {
			cfg.HookID = h.Hook
		}
	}
	if h.Lifecycle != "" {
		cfg.Lifecycle = h.Lifecycle
	}
	return cfg, regFindings, nil
}
