package main

import (
	"flag"
	"io"

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
// replay (output.Offline), and returns the exit status: 1 for a finding at
// or above --fail-on, 2 for an input not checked whole, 3 both.
func (m *Main) finishOffline(cmd string, of *offlineFlags, sources []report.Source, notPossible []report.NotPossible) error {
	o := output.Offline{Cmd: cmd, Format: of.format, Stdout: m.Stdout, Stderr: m.Stderr, Reports: of.reports,
		Log: of.lg, OTLP: of.otlpx, Threshold: of.threshold}
	code, msg, err := o.Finish(sources, notPossible)
	if err != nil {
		return usageError("%v", err)
	}
	if code != 0 {
		return &exitError{code: code, msg: msg}
	}
	return nil
}
