package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

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
	for _, f := range output.ReportFormats {
		known = known || f == format
	}
	if !known {
		return fmt.Errorf("format %q is not one of %s", format, strings.Join(output.ReportFormats, ", "))
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

// open validates the flags, reads the baseline and opens every report
// file before any work, so that a bad path fails fast (exit 2), and starts
// the report run (output.OpenReports). format is --format, the stdout
// shorthand, used when no --report names stdout.
func (rf *reportFlags) open(m *Main, format string, formatSet bool, ef *engineFlags, snapshot string, failOn tap.Level) (*output.Reports, error) {
	var specs []output.ReportSpec
	stdout := 0
	for _, s := range rf.reports {
		specs = append(specs, output.ReportSpec{Format: s.format, File: s.file})
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
		specs = append([]output.ReportSpec{{Format: format}}, specs...)
	} else if formatSet {
		return nil, usageError("--format and a --report to standard output both given: use one")
	}
	var claim *report.Claim
	if rf.claim != "" {
		c, err := report.ParseClaim(rf.claim, ef.spec, ef.snapshot)
		if err != nil {
			return nil, usageError("%v", err)
		}
		claim = c
	}
	rs, err := output.OpenReports(output.ReportsConfig{Specs: specs, Stdout: m.Stdout, Stderr: m.Stderr,
		Baseline: rf.baseline, WriteBaseline: rf.writeBaseline, Claim: claim, SarifRoot: rf.sarifRoot,
		Header:      report.Header{Tool: "ahp-tap", Version: version, Snapshot: snapshot, Catalogue: rules.Catalogue},
		FailOn:      failOn,
		StepSummary: os.Getenv("GITHUB_STEP_SUMMARY")})
	if err != nil {
		return nil, usageError("%v", err)
	}
	return rs, nil
}

// refuseInputsAsOutputs refuses a --report, --write-baseline or --log file
// that is one of the inputs (issue 28 item 10); --write-baseline may name
// the --baseline it replaces.
func refuseInputsAsOutputs(rf *reportFlags, of *offlineFlags, registration string, inputs []string) error {
	in := append([]string{registration}, inputs...)
	withBaseline := append(append([]string(nil), in...), rf.baseline)
	var outs [][2]string
	for _, r := range rf.reports {
		outs = append(outs, [2]string{"--report " + r.format + "=", r.file})
	}
	outs = append(outs, [2]string{"--log", of.logPath})
	if err := output.RefuseInputs(outs, withBaseline); err != nil {
		return usageError("%v", err)
	}
	if err := output.RefuseInputs([][2]string{{"--write-baseline", rf.writeBaseline}}, in); err != nil {
		return usageError("%v", err)
	}
	return nil
}

// finishReports ends check and replay: the streaming reports get their
// totals, then finishOffline writes the log and the text/json reports
// where --report and --format say. The streaming run decides exit code 1
// (it knows the baseline); exit code 2 from finishOffline (an input not
// checked whole) wins.
func (m *Main) finishReports(cmd string, of *offlineFlags, rs *output.Reports, sources []report.Source) error {
	end, err := rs.Finish()
	if err != nil {
		return usageError("%v", err)
	}
	of.reports = rs
	err = m.finishOffline(cmd, of, sources, end.NotPossible)
	if cerr := rs.Close(); cerr != nil && err == nil {
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
