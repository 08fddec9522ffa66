package main

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/conduct"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/replay"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// runReplay re-checks recorded traffic: ahp-tap captures, or plain NDJSON
// streams. Exit 1 when a finding at or above --fail-on exists.
func (m *Main) runReplay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	var ef engineFlags
	ef.register(fs)
	var of offlineFlags
	of.register(fs)
	var otlpf otlpFlags
	otlpf.register(fs)
	var rf reportFlags
	rf.register(fs)
	input := fs.String("input", "", "input `KIND`: har for an HTTP Archive (default: recognised by content)")
	conductMode := fs.String("conduct", "auto", "judge the harness's conduct across the captures of one registration's backends: `auto` (when the registration has several hooks), on or off (docs/conduct.md)")
	skew := fs.Duration("conduct-skew", conduct.DefaultSkew, "clock tolerance between the captures of different links: facts closer than this are simultaneous")
	direction := fs.String("direction", "", "for plain NDJSON input: every line was sent by `harness` or backend (default: guess per line); refused for a capture or HAR, which record each sender")
	var selects []capture.SelectTerm
	fs.Func("select", "with --write-capture: keep the exchanges matching `EXPR` (key=value,... with keys check, event, conn, id, from, to; comma is and, a repeated --select is or)", func(v string) error {
		t, err := capture.ParseSelect(v)
		selects = append(selects, t)
		return err
	})
	writeCapture := fs.String("write-capture", "", "write the exchanges --select keeps to a new capture `FILE` (mode 0600)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	dir, err := checkReplayFlags(len(selects) > 0, *writeCapture != "", *direction, *input, *conductMode, *skew, fs.NArg())
	if err != nil {
		return err
	}
	if err := of.validate(); err != nil {
		return err
	}
	names, err := replay.ExpandInputs(fs.Args())
	if err != nil {
		return usageError("replay: %v", err)
	}
	l, err := ef.load()
	if err != nil {
		return err
	}
	if of.otlpx, err = otlpf.open("", m.Stderr); err != nil {
		return err
	}
	if err := refuseInputsAsOutputs(&rf, &of, ef.registration, fs.Args()); err != nil {
		return err
	}
	selected, err := m.createSelected(*writeCapture, append([]string{ef.registration}, fs.Args()...))
	if err != nil {
		return err
	}
	if selected != nil {
		defer selected.Close() // closed by WriteSelection; idempotent on the error paths
	}
	if err := of.openLog("replay", m.diag()); err != nil {
		return err
	}
	defer of.lg.Close() // idempotent; flushes on the error paths too
	set := flagsGiven(fs)
	rs, err := rf.open(m, of.format, set["format"], &ef, l.Config.Snapshot, of.threshold)
	if err != nil {
		return err
	}
	defer rs.Close()
	run := rs.Run()
	rp := &replay.Replayer{Config: l.Config, Rules: l.Options, Set: set, Dir: dir, Input: *input, Diag: m.diag(), Ctx: ctx, Run: run}
	ic := replay.NewChecker("replay", rp, m.Stdin, m.Stderr, of.allowEmpty, false, !rf.quiet && isTerminal(m.Stderr))
	sources := append(registrationSources(ef.registration, l), ic.CheckAll(ctx, names)...)
	if _, ok := interruption(ctx); ok {
		return m.finishInterrupted(ctx, &of, rs, sources)
	}
	if *conductMode != "off" {
		if src := rp.Conduct(names, *skew, *conductMode == "on"); src != nil {
			sources = append(sources, *src)
		}
	}
	if err := m.writeSelection(rp, selected, *writeCapture, selects, fs.Args()); err != nil {
		return err
	}
	return m.finishReports("replay", &of, rs, sources)
}

// finishInterrupted ends a replay a SIGINT/SIGTERM stopped: the reports of
// what was read, and the exit of the signal unless the reports failed.
func (m *Main) finishInterrupted(ctx context.Context, of *offlineFlags, rs *output.Reports, sources []report.Source) error {
	sig, _ := interruption(ctx)
	err := m.finishReports("replay", of, rs, sources)
	if ee, isExit := err.(*exitError); err != nil && (!isExit || ee.code == 2) {
		return err
	}
	return interruptedError(sig, "replay")
}

// checkReplayFlags checks the values of replay's own flags (exit 2 with a
// one-line reason for a bad one) and returns --direction's.
func checkReplayFlags(selects, writeCapture bool, direction, input, conductMode string, skew time.Duration, nArgs int) (tap.Direction, error) {
	var dir tap.Direction
	if selects != writeCapture {
		return dir, usageError("--select and --write-capture go together")
	}
	if direction != "" {
		d, err := tap.ParseDirection(direction)
		if err != nil {
			return dir, usageError("--direction: %v", err)
		}
		dir = d
	}
	if input != "" && input != "har" {
		return dir, usageError("--input %q is not har", input)
	}
	if nArgs == 0 {
		return dir, usageError("replay: no CAPTURE given (usage: ahp-tap replay [flags] CAPTURE...)")
	}
	if conductMode != "auto" && conductMode != "on" && conductMode != "off" {
		return dir, usageError("--conduct %q is not auto, on or off", conductMode)
	}
	if skew < 0 {
		return dir, usageError("--conduct-skew must not be negative")
	}
	return dir, nil
}

// createSelected creates the --write-capture file (nil without one) before
// the replay, so that a path refused (a symlink, a directory, one of the
// inputs) is exit 2 at once.
func (m *Main) createSelected(path string, inputs []string) (*os.File, error) {
	if err := output.RefuseInputs([][2]string{{"--write-capture", path}}, inputs); err != nil {
		return nil, usageError("%v", err)
	}
	if path == "" {
		return nil, nil
	}
	f, err := output.CreateFile(path, m.Stderr)
	if err != nil {
		return nil, usageError("--write-capture: %v", err)
	}
	return f, nil
}

// writeSelection writes the --write-capture file (replay.WriteSelection),
// when there is one, and says how many exchanges it kept.
func (m *Main) writeSelection(rp *replay.Replayer, f *os.File, path string, terms []capture.SelectTerm, inputs []string) error {
	if path == "" {
		return nil
	}
	kept, err := rp.WriteSelection(f, path, terms, inputs, m.Stdin, m.Stderr)
	if err != nil {
		return usageError("%v", err)
	}
	printable.Fprintf(m.Stderr, "ahp-tap replay: wrote %d selected exchange(s) to %s\n", kept, path)
	return nil
}

// registrationSources is the --registration file's own findings as a
// report source (none without a registration or a finding).
func registrationSources(name string, l *loaded) []report.Source {
	if name == "" {
		return nil
	}
	if fds := l.RegistrationFindings(); len(fds) > 0 {
		return []report.Source{{Name: name, Findings: fds}}
	}
	return nil
}
