package output

import (
	"fmt"
	"io"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// offlineOTLPClose is how long an offline command waits, at exit, for the
// OTLP collector to take the findings still queued (a live tap waits far
// less: its backend's exit must not wait).
const offlineOTLPClose = 10 * time.Second

// Offline is the end of an offline run (check, replay): where its
// findings and its classic reports go.
type Offline struct {
	// Cmd is the command, starting its lines ("check", "replay").
	Cmd string
	// Format is --format: the text or JSON report on Stdout, unless
	// Reports (--report) says where they go.
	Format  string
	Stdout  io.Writer
	Stderr  io.Writer
	Reports *Reports
	// Log is the opened --log (nil: none); OTLP the exporter of
	// --otlp-endpoint (nil: none).
	Log  *report.Log
	OTLP *otlpexport.Exporter
	// Threshold is --fail-on (0: never fail on findings).
	Threshold tap.Level
}

// Finish writes the log, the reports and the summary of the run, and
// returns its exit status: bit 1 (exit 1) when a finding at or above the
// threshold exists, bit 2 (exit 2) when an input could not be checked
// whole (unreadable, not traffic, empty, damaged records), 3 both; msg is
// the one line that says why when bit 2 is set. An error is a report that
// could not be written.
func (o Offline) Finish(sources []report.Source, notPossible []report.NotPossible) (code int, msg string, err error) {
	for _, src := range sources {
		for _, f := range src.Findings {
			o.Log.WriteWait(f) // offline: wait rather than drop; a nil log discards
		}
	}
	sources = exportSources(o.OTLP, sources, o.Log)
	if err := o.Log.Close(); err != nil {
		printable.Fprintf(o.Stderr, "ahp-tap %s: closing the log: %v\n", o.Cmd, err)
	}
	sum := report.SummaryOf(sources)
	sum.NotPossible = notPossible
	outs := []Classic{{Format: o.Format, W: o.Stdout}}
	var header *report.JSONHeader
	if o.Reports != nil { // --report: text/json where the flags say
		outs = o.Reports.Classic()
		sum.Baselined, sum.Claim = o.Reports.End.Baselined, o.Reports.End.Claim
		header = o.Reports.JSONHeader
	}
	for _, c := range outs {
		if err := WriteClassic(c.W, c.Format, header, sources, sum); err != nil {
			return 0, "", fmt.Errorf("%s: writing the report: %v", o.Cmd, err)
		}
		if c.Format == "text" && sum.Baselined > 0 {
			fmt.Fprintf(c.W, "  baselined: %d findings accepted by the baseline\n", sum.Baselined)
		}
		if c.Format == "text" && sum.Claim != nil {
			sum.Claim.WriteText(c.W)
		}
	}
	if o.Threshold != 0 && sum.Levels.AtLeast(o.Threshold) > 0 {
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
		msg = fmt.Sprintf("%s: %d of %d %s not checked whole (see above)", o.Cmd, bad, len(sum.Inputs), plural(len(sum.Inputs), "input", "inputs"))
	}
	return code, msg, nil
}

// WriteClassic writes sources and their summary in format, text or json
// (the JSON report with header h, nil for the default).
func WriteClassic(w io.Writer, format string, h *report.JSONHeader, sources []report.Source, sum *report.Summary) error {
	if format == "json" {
		return report.WriteJSONWithHeader(w, h, sources, sum)
	}
	return report.WriteText(w, sources, sum)
}

// exportSources sends every finding of an offline run to x, each with the
// file it was found in, and returns sources with a TAP-1 source added when
// some could not be exported (also written to lg).
func exportSources(x *otlpexport.Exporter, sources []report.Source, lg *report.Log) []report.Source {
	if x == nil {
		return sources
	}
	for _, src := range sources {
		for _, f := range src.Findings {
			x.WriteWait(f, src.Name)
		}
	}
	if f := x.Close(offlineOTLPClose); f != nil {
		lg.WriteWait(*f)
		sources = append(sources, report.Source{Name: "otlp", Findings: []tap.Finding{*f}})
	}
	return sources
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
