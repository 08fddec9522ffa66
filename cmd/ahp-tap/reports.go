package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// reportFormats are the --report formats, in the order the help lists them.
var reportFormats = []string{"text", "json", "junit", "sarif", "github", "html"}

// A reportSpec is one --report FORMAT[=FILE].
type reportSpec struct {
	format string
	file   string // "" or "-": standard output
}

// reportList is the repeatable --report flag.
type reportList []reportSpec

func (l *reportList) String() string {
	var parts []string
	for _, s := range *l {
		parts = append(parts, s.format+"="+s.file)
	}
	return strings.Join(parts, ",")
}

func (l *reportList) Set(v string) error {
	format, file, _ := strings.Cut(v, "=")
	known := false
	for _, f := range reportFormats {
		known = known || f == format
	}
	if !known {
		return fmt.Errorf("format %q is not one of %s", format, strings.Join(reportFormats, ", "))
	}
	*l = append(*l, reportSpec{format: format, file: file})
	return nil
}

// reportFlags are the CI-report flags of check and replay.
type reportFlags struct {
	reports       reportList
	baseline      string
	writeBaseline string
	claim         string
	sarifRoot     string
	quiet         bool
}

func (rf *reportFlags) register(fs *flag.FlagSet) {
	fs.Var(&rf.reports, "report", "write a report as `FORMAT[=FILE]`: text, json, junit, sarif, github or html; repeatable, at most one to standard output (no FILE, or -)")
	fs.StringVar(&rf.baseline, "baseline", "", "accept the findings listed in baseline `FILE` (they do not fail the run); an entry that no longer occurs fails it")
	fs.StringVar(&rf.writeBaseline, "write-baseline", "", "write every finding of this run to baseline `FILE` (sorted JSON)")
	fs.StringVar(&rf.claim, "claim", "", "print the evidence for a conformance `CLAIM` like role=backend,binding=stdio,profiles=base,tool-interception (role: harness, backend or both; binding: stdio, http or both)")
	fs.StringVar(&rf.sarifRoot, "sarif-root", "", "make SARIF and annotation file paths relative to `DIR` (default: the working directory)")
	fs.BoolVar(&rf.quiet, "quiet", false, "no progress bar")
}

// reportSet is what reportFlags resolve to: the open report files, the
// streaming writers, and the text/json outputs that are written from the
// collected findings at the end.
type reportSet struct {
	writers  []report.Writer
	closers  []io.Closer
	classic  []classicReport // text and json
	baseline *report.Baseline
	claim    *report.Claim
	root     string
	sarif    *report.SARIF
	html     *report.HTML
	// baselined and claimMatrix are what the run concluded, for the
	// text and json reports.
	baselined   int
	claimMatrix *report.ClaimMatrix
	// header is the run's header; jsonHeader is it with the inputs'
	// sizes and digests, once the run has ended.
	header     report.Header
	jsonHeader *report.JSONHeader
}

// A classicReport is a text or json report written at the end.
type classicReport struct {
	format string
	w      io.Writer
}

// open validates the flags and opens every report file before any work,
// so that a bad path fails fast (exit 2). format is --format, the
// stdout shorthand, used when no --report names stdout.
func (rf *reportFlags) open(m *Main, format string, formatSet bool, ef *engineFlags) (*reportSet, error) {
	rs := &reportSet{root: rf.sarifRoot}
	specs := append(reportList(nil), rf.reports...)
	stdout := 0
	for _, s := range specs {
		if s.file == "" || s.file == "-" {
			stdout++
		}
	}
	if stdout > 1 {
		return nil, usageError("--report: at most one report may go to standard output (give the others =FILE)")
	}
	if stdout == 0 && (formatSet || len(specs) == 0) {
		if err := checkFormat(format); err != nil {
			return nil, err
		}
		specs = append(reportList{{format: format}}, specs...)
	} else if formatSet {
		return nil, usageError("--format and a --report to standard output both given: use one")
	}
	if rf.baseline != "" {
		f, err := os.Open(rf.baseline)
		if err != nil {
			return nil, usageError("--baseline: %v", err)
		}
		b, err := report.ReadBaseline(bufio.NewReader(f))
		f.Close()
		if err != nil {
			return nil, usageError("--baseline %s: %v", rf.baseline, err)
		}
		rs.baseline = b
	}
	if rf.claim != "" {
		c, err := report.ParseClaim(rf.claim, ef.spec, ef.snapshot)
		if err != nil {
			return nil, usageError("%v", err)
		}
		rs.claim = c
	}
	for _, s := range specs {
		var w io.Writer = m.Stdout
		if s.file != "" && s.file != "-" {
			f, err := createReport(s.file)
			if err != nil {
				rs.close()
				return nil, usageError("--report %s=%s: %v", s.format, s.file, err)
			}
			rs.closers = append(rs.closers, f)
			bw := bufio.NewWriterSize(f, 64<<10)
			rs.closers = append([]io.Closer{flushCloser{bw}}, rs.closers...)
			w = bw
		}
		switch s.format {
		case "text", "json":
			rs.classic = append(rs.classic, classicReport{format: s.format, w: w})
		case "junit":
			rs.writers = append(rs.writers, report.NewJUnit(w))
		case "sarif":
			rs.sarif = report.NewSARIF(w)
			rs.writers = append(rs.writers, rs.sarif)
		case "github":
			rs.writers = append(rs.writers, report.NewGitHub(w, os.Getenv("GITHUB_STEP_SUMMARY")))
		case "html":
			rs.html = report.NewHTML(w)
			rs.writers = append(rs.writers, rs.html)
		}
	}
	if rf.writeBaseline != "" {
		// Checked now, written at the end.
		f, err := createReport(rf.writeBaseline)
		if err != nil {
			rs.close()
			return nil, usageError("--write-baseline: %v", err)
		}
		f.Close()
	}
	return rs, nil
}

// flushCloser flushes a buffered report file before it is closed.
type flushCloser struct{ w *bufio.Writer }

func (f flushCloser) Close() error { return f.w.Flush() }

// createReport creates (or truncates) a report file: mode 0600, never
// following a symlink at the path.
func createReport(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link; refusing to write through it", path)
		}
		return nil, err
	}
	return f, nil
}

// close flushes and closes every report file; the first error wins.
func (rs *reportSet) close() error {
	var first error
	for _, c := range rs.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	rs.closers = nil
	return first
}

// newRun starts the streaming report run.
func (rs *reportSet) newRun(snapshot string, failOn tap.Level) (*report.Run, error) {
	rs.header = report.Header{Tool: "ahp-tap", Version: version, Snapshot: snapshot, Catalogue: rules.Catalogue}
	return report.NewRun(report.RunConfig{
		Header:   rs.header,
		Writers:  rs.writers,
		Root:     rs.root,
		Baseline: rs.baseline,
		Claim:    rs.claim,
		FailOn:   failOn,
	})
}

// feedDocument hands one checked document to the streaming reports: its
// frames (so findings get their line and fingerprint shape), findings and
// exchanges. A stream's frame N is its line N; a message file is one frame
// on line 1; a registration has no frames. kindName is the name the
// document kind was detected by.
func feedDocument(run *report.Run, kindName string, data []byte, cfg tap.Config, fds []tap.Finding, xs []tap.ExchangeRecord) {
	if run == nil {
		return
	}
	run.Note(cfg.Registration != nil, cfg.HookID != "", cfg.Timeout > 0 || cfg.HookID != "", "")
	switch rules.DetectKind(kindName, data) {
	case rules.DocRegistration:
	case rules.DocStream:
		for i, f := range rules.StreamFrames(data, 0) {
			f.Seq = uint64(i + 1)
			run.Frame(f, i+1)
		}
	default:
		f := &tap.Frame{Seq: 1, Transport: tap.File, Raw: data}
		f.Dir = tap.GuessDirection(f)
		run.Frame(f, 1)
	}
	run.Findings(fds)
	run.Exchanges(xs)
}

// finishStreams ends the streaming run for commands whose text/json
// output is written elsewhere (finishOffline): writers get the totals, the
// claim matrix and stale entries go to stderr, the baseline is written.
func (rs *reportSet) finishStreams(m *Main, rf *reportFlags, run *report.Run, notPossible []report.NotPossible) (*report.End, error) {
	end, err := run.Close(notPossible)
	if err != nil {
		rs.close()
		return end, usageError("writing a report: %v", err)
	}
	rs.baselined, rs.claimMatrix = end.Baselined, end.Claim
	rs.jsonHeader = report.HeaderOf(rs.header, end)
	if end.Claim != nil && len(rs.classic) == 0 {
		end.Claim.WriteText(m.Stderr)
	}
	if rs.sarif != nil && rs.sarif.Dropped() > 0 {
		fmt.Fprintf(m.Stderr, "ahp-tap: SARIF report: %d results left out (GitHub takes at most %d per run)\n", rs.sarif.Dropped(), report.SARIFMaxResults)
	}
	if s := report.StaleSummary(end); s != "" {
		fmt.Fprintf(m.Stderr, "ahp-tap: %s\n", s) // one line, however many (issue 28 item 9)
	}
	if rf.writeBaseline != "" {
		f, err := createReport(rf.writeBaseline)
		if err != nil {
			return end, usageError("--write-baseline: %v", err)
		}
		werr := run.NewBaseline().Write(f)
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			return end, usageError("--write-baseline: %v", werr)
		}
	}
	return end, nil
}

// finishReports ends check and replay: the streaming reports get their
// totals, then finishOffline writes the log and the text/json reports
// where --report and --format say. The streaming run decides exit code 1
// (it knows the baseline); exit code 2 from finishOffline (an input not
// checked whole) wins.
func (m *Main) finishReports(cmd string, of *offlineFlags, rf *reportFlags, rs *reportSet, run *report.Run, sources []report.Source, notPossible []report.NotPossible) error {
	end, err := rs.finishStreams(m, rf, run, notPossible)
	if err != nil {
		return err
	}
	of.reports = rs
	err = m.finishOffline(cmd, of, sources, notPossible)
	if cerr := rs.close(); cerr != nil && err == nil {
		return usageError("writing a report: %v", cerr)
	}
	if ee, ok := err.(*exitError); err != nil && (!ok || ee.code != 1) {
		return err
	}
	if end.Failing() {
		return &exitError{code: 1}
	}
	return nil
}

// inputEnd is what the streaming reports learn of an input once checked:
// its size and digest (its name and frames they counted themselves).
func inputEnd(src report.Source) report.InputEnd {
	if src.Input == nil {
		return report.InputEnd{}
	}
	return report.InputEnd{Bytes: src.Input.Bytes, SHA256: src.Input.SHA256}
}
