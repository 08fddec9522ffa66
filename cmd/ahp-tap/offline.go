package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/replay"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// An input is one opened input of check or replay (capture.Input) with
// its progress bar on stderr (inactive unless asked for).
type input struct {
	*capture.Input
	progress *replay.Progress
}

// openInput opens name ("-": standard input), reading gzip transparently,
// and recognises what it holds (capture.OpenInput). With bar, a progress
// bar on stderr follows the bytes read (done by input.close).
func (m *Main) openInput(name string, bar bool) (*input, error) {
	in := &input{}
	ci, err := capture.OpenInput(name, m.Stdin, func(r io.Reader, total int64) io.Reader {
		in.progress = replay.NewProgress(m.Stderr, total, bar)
		return in.progress.Reader(r)
	})
	if err != nil {
		in.progress.Done()
		return nil, err
	}
	in.Input = ci
	return in, nil
}

func (in *input) close() {
	in.progress.Done()
	in.Close()
}

// sum is the input's size and digest (none for no input).
func (in *input) sum() (uint64, string) {
	if in == nil {
		return 0, ""
	}
	return in.Sum()
}

// offlineFlags are the flags check and replay share besides engineFlags:
// output, failure level, log, empty inputs.
type offlineFlags struct {
	format     string
	reports    *output.Reports // --report outputs, when given (reports.go)
	failOn     string
	logPath    string
	allowEmpty bool

	threshold tap.Level            // parsed --fail-on; 0: never fail
	lg        *report.Log          // the opened --log, or nil
	otlpx     *otlpexport.Exporter // replay --otlp-endpoint, or nil
}

func (of *offlineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&of.format, "format", "text", "output `FORMAT`: text or json")
	fs.StringVar(&of.failOn, "fail-on", "error", "exit 1 when a finding at or above `LEVEL` exists: error, warn, info or never")
	fs.StringVar(&of.logPath, "log", "", "also append findings to the violation log at `PATH` (- for stderr)")
	fs.BoolVar(&of.allowEmpty, "allow-empty", false, "accept an input with no frame (by default it is an error, exit 2)")
}

// validate checks the values given (exit 2 with a one-line reason).
func (of *offlineFlags) validate() error {
	if err := checkFormat(of.format); err != nil {
		return err
	}
	if of.failOn != "never" {
		lvl, err := tap.ParseLevel(of.failOn)
		if err != nil {
			return usageError("--fail-on %q is not error, warn, info or never", of.failOn)
		}
		of.threshold = lvl
	}
	return nil
}

// openLog opens --log before the work, so that a bad path fails fast.
func (of *offlineFlags) openLog(cmd string, stderr io.Writer) error {
	if of.logPath == "" {
		return nil
	}
	lg, err := report.OpenLog(of.logPath, stderr)
	if err != nil {
		return usageError("%s: %v", cmd, err)
	}
	of.lg = lg
	return nil
}

// inputChecker checks one input of any kind.
type inputChecker struct {
	m          *Main
	cmd        string // "check" or "replay"
	flags      *loaded
	rp         *replay.Replayer
	allowEmpty bool
	// excerpt says a stream is judged as an excerpt (check) rather than a
	// whole stdio link (replay).
	excerpt bool
	// in is the last input (check fills the source from its digest).
	in *input
	// bar says to show a progress bar on stderr while an input is read.
	bar bool
}

// check checks the named input and returns it as a report source. What
// keeps it from being checked (unreadable, not traffic, empty, damaged
// records) is said on standard error, one line each, and in the source's
// Input.
func (ic *inputChecker) check(name string) report.Source {
	ic.in = nil
	ic.rp.Lines = nil
	src := ic.checkInput(name)
	src.Input.Bytes, src.Input.SHA256 = ic.in.sum()
	if len(ic.rp.Lines) == len(src.Findings) {
		src.Lines = ic.rp.Lines // each finding's line in the input (issue 21 item 5)
	}
	ic.rp.Lines = nil
	return src
}

func (ic *inputChecker) checkInput(name string) report.Source {
	src := report.Source{Name: name, Input: &report.Input{}}
	fail := func(format string, args ...any) report.Source {
		src.Input.Error = fmt.Sprintf(format, args...)
		printable.Fprintf(ic.m.Stderr, "ahp-tap %s: %s: %s\n", ic.cmd, name, src.Input.Error)
		return src
	}
	in, err := ic.m.openInput(name, ic.bar)
	if err != nil {
		src.Input.Kind = "unreadable"
		return fail("%v", err)
	}
	defer in.close()
	ic.in = in
	ic.rp.Progress = in.progress
	defer func() { ic.rp.Progress = nil }()
	if ctx := ic.rp.Ctx; ctx != nil {
		// A signal interrupts a read that waits (a FIFO, a pipe that
		// never ends): closing a pollable file ends its Read.
		stop := context.AfterFunc(ctx, in.close)
		defer stop()
	}
	if ic.rp.IsHAR(in.R) {
		in.Kind = capture.KindHAR
	}
	src.Input.Kind = in.KindText()
	if ic.rp.Dir != 0 && (in.Kind == capture.KindCapture || in.Kind == capture.KindHAR) {
		// Issue 21 item 7: it was silently ignored. A capture and a HAR
		// record each frame's sender; --direction is for NDJSON.
		return fail("--direction is for plain NDJSON streams: a %s records who sent each frame; replay it without --direction", in.Kind)
	}
	switch in.Kind {
	case capture.KindHAR:
		if err := ic.checkHAR(in, &src); err != nil {
			return fail("%v", err)
		}
	case capture.KindLog:
		return fail("this is a violation log (findings ahp-tap wrote), not traffic; read it with 'ahp-tap tail %s'", name)
	case capture.KindBinary:
		return fail("not text: neither a capture, an NDJSON stream nor a JSON message (gzip is read transparently)")
	case capture.KindEmpty:
		if !ic.allowEmpty {
			return fail("empty: no frame to audit (give --allow-empty to accept empty inputs)")
		}
		return src
	case capture.KindCapture:
		ic.rp.Records, ic.rp.Frames, ic.rp.Forgotten = nil, 0, 0
		ic.rp.Damaged = func(le *capture.LineError) {
			src.Input.Damaged++
			printable.Fprintf(ic.m.Stderr, "ahp-tap %s: %s:%d: damaged record skipped: %v\n", ic.cmd, name, le.Line, le.Err)
		}
		fds, err := ic.rp.ReplayCapture(capture.NewReader(in.R))
		ic.rp.Damaged = nil
		if err != nil && err != replay.ErrInterrupted {
			return fail("%v", err)
		}
		src.Findings, src.Exchanges, src.ExchangesOmitted = fds, ic.rp.Records, ic.rp.Forgotten
		src.Input.Frames = ic.rp.Frames
	case capture.KindStream:
		// Streamed line by line, each line's audit copy capped as the
		// live taps cap it: a 1 GiB line (or a gzip bomb holding one) is
		// never held (issue 28 item 5). check judges it as an excerpt.
		ic.rp.Records, ic.rp.Frames, ic.rp.Forgotten = nil, 0, 0
		fds, err := ic.rp.ReplayStream(in.R, ic.excerpt)
		if err != nil && err != replay.ErrInterrupted {
			return fail("%v", err)
		}
		src.Findings, src.Exchanges, src.ExchangesOmitted = fds, ic.rp.Records, ic.rp.Forgotten
		src.Input.Frames = ic.rp.Frames
	default:
		if err := ic.checkOneDocument(in, &src); err != nil {
			return fail("%v", err)
		}
	}
	if src.Input.Frames == 0 && in.Kind != capture.KindRegistration && !ic.allowEmpty {
		return fail("no frame to audit (a capture with only its header, or blank lines); give --allow-empty to accept it")
	}
	return src
}

// checkHAR checks an HTTP Archive into src.
func (ic *inputChecker) checkHAR(in *input, src *report.Source) error {
	ic.rp.Records, ic.rp.Frames, ic.rp.Forgotten = nil, 0, 0
	fds, err := ic.rp.ReplayHAR(in.R)
	if err != nil {
		return err
	}
	src.Findings, src.Exchanges, src.ExchangesOmitted = fds, ic.rp.Records, ic.rp.Forgotten
	src.Input.Frames = ic.rp.Frames
	if src.Input.Frames == 0 && !ic.allowEmpty {
		return errors.New(replay.HAREmpty(ic.rp.HAR))
	}
	return nil
}

// checkOneDocument checks a message or a registration into src: one
// document, read up to the audit cap of one frame; a longer message is
// audited as a truncated prefix (TAP-1), the rest counted, not held
// (issue 28 item 5).
func (ic *inputChecker) checkOneDocument(in *input, src *report.Source) error {
	data, err := io.ReadAll(io.LimitReader(in.R, replay.MaxLine+1))
	if err != nil {
		return err
	}
	if in.Kind == capture.KindMessage {
		src.Input.Frames = 1
	}
	if len(data) > replay.MaxLine {
		rest, err := io.Copy(io.Discard, in.R)
		if err != nil {
			return err
		}
		src.Findings, src.Exchanges = ic.rp.CheckMessagePrefix(data[:replay.MaxLine], int64(len(data))+rest)
		return nil
	}
	src.Findings, src.Exchanges = ic.rp.CheckDocument(rules.DetectKind("input.json", data), data)
	return nil
}

// finishOffline writes the log, the report and the summary of check or
// replay, and returns the exit status: bit 1 (exit 1) when a finding at or
// above --fail-on exists, bit 2 (exit 2) when an input could not be
// checked whole (unreadable, not traffic, empty, damaged records); 3 is
// both.
func (m *Main) finishOffline(cmd string, of *offlineFlags, sources []report.Source, notPossible []report.NotPossible) error {
	for _, src := range sources {
		for _, f := range src.Findings {
			of.lg.WriteWait(f) // offline: wait rather than drop; a nil log discards
		}
	}
	sources = exportSources(of.otlpx, sources, of.lg)
	if err := of.lg.Close(); err != nil {
		printable.Fprintf(m.Stderr, "ahp-tap %s: closing the log: %v\n", cmd, err)
	}
	sum := report.SummaryOf(sources)
	sum.NotPossible = notPossible
	outs := []output.Classic{{Format: of.format, W: m.Stdout}}
	var header *report.JSONHeader
	if of.reports != nil { // --report: text/json where the flags say (reports.go)
		outs = of.reports.Classic()
		sum.Baselined, sum.Claim = of.reports.End.Baselined, of.reports.End.Claim
		header = of.reports.JSONHeader
	}
	for _, o := range outs {
		if err := writeReport(o.W, o.Format, header, sources, sum); err != nil {
			return usageError("%s: writing the report: %v", cmd, err)
		}
		if o.Format == "text" && sum.Baselined > 0 {
			fmt.Fprintf(o.W, "  baselined: %d findings accepted by the baseline\n", sum.Baselined)
		}
		if o.Format == "text" && sum.Claim != nil {
			sum.Claim.WriteText(o.W)
		}
	}
	code := 0
	if of.threshold != 0 && sum.Levels.AtLeast(of.threshold) > 0 {
		code |= 1
	}
	bad := 0
	for _, in := range sum.Inputs {
		if in.Error != "" || in.Damaged > 0 {
			bad++
		}
	}
	if bad > 0 {
		code |= 2
		return &exitError{code: code, msg: fmt.Sprintf("%s: %d of %d %s not checked whole (see above)", cmd, bad, len(sum.Inputs), plural(len(sum.Inputs), "input", "inputs"))}
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
