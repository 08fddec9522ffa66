package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/ahp-tap/ahp-tap/internal/safefile"
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
		b, err := rf.readBaseline(m.Stderr)
		if err != nil {
			return nil, err
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
			f, err := createReport(s.file, m.Stderr)
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
		f, err := createReport(rf.writeBaseline, m.Stderr)
		if err != nil {
			rs.close()
			return nil, usageError("--write-baseline: %v", err)
		}
		f.Close()
	}
	return rs, nil
}

// readBaseline reads --baseline. A file that does not exist yet (the
// first run of a CI recipe) is an empty baseline: every finding counts
// and the exit code says so, every report is still written, and one line
// says how to create it (issue 21 item 4).
func (rf *reportFlags) readBaseline(stderr io.Writer) (*report.Baseline, error) {
	f, err := os.Open(rf.baseline)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "ahp-tap: --baseline %s does not exist yet: no finding is accepted; create it with --write-baseline %s\n", rf.baseline, rf.baseline)
		return nil, nil
	}
	if err != nil {
		return nil, usageError("--baseline: %v", err)
	}
	defer f.Close()
	b, err := report.ReadBaseline(bufio.NewReader(f))
	if err != nil {
		return nil, usageError("--baseline %s: %v", rf.baseline, err)
	}
	return b, nil
}

// flushCloser flushes a buffered report file before it is closed.
type flushCloser struct{ w *bufio.Writer }

func (f flushCloser) Close() error { return f.w.Flush() }

// createReport creates (or truncates) a report file: mode 0600 (an
// existing wider one is made 0600, and stderr says so), never through a
// symlink at the path, never blocking on a FIFO, only a regular file
// (safefile.Create).
func createReport(path string, stderr io.Writer) (*os.File, error) {
	f, notice, err := safefile.Create(path)
	if err != nil {
		return nil, err
	}
	if notice != "" && stderr != nil {
		fmt.Fprintf(stderr, "ahp-tap: %s\n", notice)
	}
	return f, nil
}

// refuseInputsAsOutputs refuses a --report, --write-baseline or --log file
// that is one of the inputs (the same file by device and inode, whatever
// its name): opening it would destroy the input before it is read (issue
// 28 item 10). --write-baseline may name the --baseline it replaces.
func refuseInputsAsOutputs(rf *reportFlags, of *offlineFlags, registration string, inputs []string) error {
	in := append([]string{registration}, inputs...)
	check := func(flag, path string, inputs []string) error {
		if path == "" || path == "-" {
			return nil
		}
		if same, ok := safefile.SameFile(path, inputs); ok {
			return usageError("%s %s is the input %s; refusing to write over an input", flag, path, same)
		}
		return nil
	}
	for _, r := range rf.reports {
		if err := check("--report "+r.format+"=", r.file, append(in, rf.baseline)); err != nil {
			return err
		}
	}
	if err := check("--write-baseline", rf.writeBaseline, in); err != nil {
		return err
	}
	return check("--log", of.logPath, append(in, rf.baseline))
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

// finishStreams ends the streaming run for commands whose text/json
// output is written elsewhere (finishOffline): writers get the totals, the
// claim matrix and stale entries go to stderr, the baseline is written.
func (rs *reportSet) finishStreams(m *Main, rf *reportFlags, run *report.Run) (*report.End, error) {
	end, err := run.Close()
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
	for _, st := range end.Stale {
		fmt.Fprintf(m.Stderr, "ahp-tap: %s\n", report.StaleText(st))
	}
	if rf.writeBaseline != "" {
		f, err := createReport(rf.writeBaseline, nil)
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
func (m *Main) finishReports(cmd string, of *offlineFlags, rf *reportFlags, rs *reportSet, run *report.Run, sources []report.Source) error {
	end, err := rs.finishStreams(m, rf, run)
	if err != nil {
		return err
	}
	of.reports = rs
	err = m.finishOffline(cmd, of, sources, end.NotPossible)
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
