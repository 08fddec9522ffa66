package main

import (
	"context"
	"flag"
	"io"
	"os"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// runCheck checks standalone files: JSON-RPC messages, stdio streams
// (.jsonl) and registration documents. Exit 0 when no error-level finding,
// 1 when there is one, 2 for usage or I/O errors.
func (m *Main) runCheck(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var ef engineFlags
	ef.register(fs)
	editContext := fs.String("edit-context", "", "host context `JSON` object for judging a response ({event, current, mode, action})")
	format := fs.String("format", "text", "output format: text or json")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("check: no FILE given (usage: ahp-tap check [flags] FILE...)")
	}
	l, err := ef.load()
	if err != nil {
		return err
	}
	if *editContext != "" {
		v, err := parseEditContext(*editContext)
		if err != nil {
			return err
		}
		l.cfg.EditContext = v
	}
	var sources []report.Source
	if ef.registration != "" {
		sources = append(sources, report.Source{Name: ef.registration, Findings: l.registrationFindings()})
	}
	for _, name := range fs.Args() {
		data, err := m.readInput(name)
		if err != nil {
			return usageError("check: %v", err)
		}
		// One session per file (rules.CheckDocumentRecords): a file is
		// an excerpt of no link.
		fds, xs := rules.CheckDocumentRecords(name, data, l.cfg, l.opt)
		sources = append(sources, report.Source{Name: name, Findings: fds, Exchanges: xs})
	}
	sum := report.SummaryOf(sources)
	if err := writeReport(m.Stdout, *format, sources, sum); err != nil {
		return usageError("check: writing the report: %v", err)
	}
	if sum.Levels.Error > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// readInput reads a named file, or standard input for "-".
func (m *Main) readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(m.Stdin)
	}
	return os.ReadFile(name)
}

// parseEditContext parses --edit-context: one JSON object.
func parseEditContext(s string) (*tap.Value, error) {
	v, dups, err := tap.ParseJSON([]byte(s))
	if err != nil {
		return nil, usageError("--edit-context is not valid JSON: %v", err)
	}
	if v.Kind != tap.Object {
		return nil, usageError("--edit-context must be a JSON object like {\"event\":\"tool.after\",\"current\":{...}}")
	}
	if len(dups) > 0 {
		return nil, usageError("--edit-context has a duplicate key %q", dups[0].Key)
	}
	return v, nil
}

func checkFormat(f string) error {
	switch f {
	case "text", "json":
		return nil
	}
	return usageError("--format %q is not text or json", f)
}

// writeReport writes sources and their summary in the chosen format.
func writeReport(w io.Writer, format string, sources []report.Source, sum *report.Summary) error {
	if format == "json" {
		return report.WriteJSON(w, sources, sum)
	}
	return report.WriteText(w, sources, sum)
}
