package main

import (
	"context"
	"encoding/json"
	"flag"

	"github.com/ahp-tap/ahp-tap/diff"
)

// runDiff compares two recordings (package diff, docs/diff.md). Exit 0
// when equal, 1 on a difference, 2 on bad input.
func (m *Main) runDiff(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	latency := fs.Duration("latency", 0, "report an exchange whose answer came more than `DURATION` sooner or later in B than in A (0: latency is not compared)")
	format := fs.String("format", "text", "output `FORMAT`: text or json")
	window := fs.Int64("window", diff.DefaultWindow, "hold at most `BYTES` of exchanges not matched yet; past it the oldest is reported as found in one recording only")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageError("diff: give two captures (usage: ahp-tap diff [flags] A B)")
	}
	if *format != "text" && *format != "json" {
		return usageError("--format %q is not text or json", *format)
	}
	if *latency < 0 || *window <= 0 {
		return usageError("--latency must not be negative and --window must be positive")
	}
	res, err := diff.Compare(fs.Arg(0), fs.Arg(1), *window, *latency)
	if err != nil {
		return usageError("%v", err)
	}
	if *format == "json" {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		res.Text(m.Stdout)
	}
	if !res.Equal {
		return &exitError{code: 1}
	}
	return nil
}
