package main

import (
	"context"
	"flag"
	"strings"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tail"
	"github.com/ahp-tap/ahp-tap/tap"
)

// runTail prints violation logs as readable lines: `ahp-tap tail [-f]
// LOG...` (package tail).
func (m *Main) runTail(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tail", flag.ContinueOnError)
	follow := fs.Bool("f", false, "follow: keep printing findings as the logs grow (until interrupted)")
	var checks, types listFlag
	fs.Var(&checks, "check", "only findings of check `ID` (BASE-2, or a family: CORR); repeatable or comma separated")
	level := fs.String("level", "info", "only findings at or above `LEVEL`: error, warn or info")
	fs.Var(&types, "event-type", "only findings about events of `TYPE` (tool.before…); repeatable or comma separated")
	colour := fs.String("color", "auto", "colour the level: `auto` (on a terminal, unless NO_COLOR is set), always or never")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	min, err := tap.ParseLevel(*level)
	if err != nil {
		return usageError("tail: --level %q is not error, warn or info", *level)
	}
	var useColour bool
	switch *colour {
	case "auto":
		useColour = report.UseColour(m.Stdout)
	case "always":
		useColour = true
	case "never":
	default:
		return usageError("tail: --color %q is not auto, always or never", *colour)
	}
	if fs.NArg() == 0 {
		return usageError("tail: no LOG given (usage: ahp-tap tail [-f] LOG...)")
	}
	return tail.Run(ctx, tail.Config{Names: fs.Args(), Follow: *follow, Checks: checks, Types: types, Min: min, Colour: useColour,
		Stdin: m.Stdin, Stdout: m.Stdout, Stderr: m.Stderr})
}

// listFlag is a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}
