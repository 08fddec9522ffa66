package main

import (
	"context"
	"flag"

	"github.com/ahp-tap/ahp-tap/examples"
)

// runDemo runs ahp-tap's main job on an embedded example: the example
// harness talks to the example backend (`--mode demo`, which has a few
// deliberate faults) through a live stdio tap, and the findings are printed
// as the tap makes them.
func (m *Main) runDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	mode := fs.String("mode", "demo", "example-backend `MODE` to audit:"+examples.ModeHelp())
	logPath := fs.String("log", "", "also append the findings to the violation log at `PATH`")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := noArguments(fs); err != nil {
		return err
	}
	if err := checkExampleMode("demo", *mode); err != nil {
		return err
	}
	self, err := selfPath()
	if err != nil {
		return usageError("demo: %v", err)
	}
	return examples.RunDemo(ctx, examples.DemoConfig{Self: self, Mode: *mode, Log: *logPath, Stdout: m.Stdout, Stderr: m.Stderr})
}
