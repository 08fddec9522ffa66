package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

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
