package main

import (
	"slices"

	"github.com/ahp-tap/ahp-tap/rules"
	"io"

	"github.com/ahp-tap/ahp-tap/report"

	"github.com/ahp-tap/ahp-tap/vocab"
)

// The output flags both live taps (stdio, http) share.

// consoleHelp is the help of --console.
const consoleHelp = "print findings as readable lines on stderr (\"ahp-tap ▸ …\"; colour on a terminal unless NO_COLOR is set)"

// summaryHelp is the help of --summary.
const summaryHelp = "print a summary on stderr at exit (default: when stderr is a terminal)"

// openConsole returns the --console sink, or nil.
func openConsole(on bool, stderr io.Writer) *report.Console {
	if !on {
		return nil
	}
	return report.NewConsole(stderr, report.UseColour(stderr))
}

// findingsTo says where a live tap's findings went, for its summary.
func findingsTo(logPath string, logFailed bool, console bool) []string {
	var out []string
	switch {
	case logPath == "-":
		out = append(out, "standard error (--log -, JSON Lines)")
	case logPath != "" && !logFailed:
		out = append(out, "the violation log "+logPath+" (read it with 'ahp-tap tail "+logPath+"')")
	}
	if console {
		out = append(out, "standard error (--console)")
	}
	if len(out) == 0 {
		out = append(out, "nowhere but this summary: give --console, or --log PATH")
	}
	return out
}

// checkIDs lists every check ID of the default rules, once each.
func checkIDs() []string {
	var ids []string
	for _, r := range rules.Default(rules.Options{}) {
		if c := string(r.Info().Check); !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	for _, c := range []string{string(vocab.Tap1), string(vocab.Tap2)} {
		if !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	return ids
}
