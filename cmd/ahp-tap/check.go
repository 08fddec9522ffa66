package main

import (
	"context"
	"flag"

	"github.com/ahp-tap/ahp-tap/replay"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// runCheck checks standalone files: JSON-RPC messages, stdio streams
// (.jsonl) and registration documents. Exit 0 when no error-level finding,
// 1 when there is one, 2 for usage or I/O errors.
func (m *Main) runCheck(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var ef engineFlags
	ef.register(fs)
	var of offlineFlags
	of.register(fs)
	editContext := fs.String("edit-context", "", "host context `JSON` object for judging a response ({event, current, mode, action})")
	var rf reportFlags
	rf.register(fs)
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := of.validate(); err != nil {
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
		l.Config.EditContext = v
	}
	if err := refuseInputsAsOutputs(&rf, &of, ef.registration, fs.Args()); err != nil {
		return err
	}
	if err := of.openLog("check", m.Stderr); err != nil {
		return err
	}
	defer of.lg.Close()
	var sources []report.Source
	if ef.registration != "" {
		sources = append(sources, report.Source{Name: ef.registration, Findings: l.RegistrationFindings()})
	}
	set := flagsGiven(fs)
	rs, err := rf.open(m, of.format, set["format"], &ef, l.Config.Snapshot, of.threshold)
	if err != nil {
		return err
	}
	defer rs.Close()
	run := rs.Run()
	if ef.registration != "" {
		run.StartInput(ef.registration)
		run.Findings(sources[0].Findings)
		run.EndInput(report.InputEnd{})
	}
	rp := &replay.Replayer{Config: l.Config, Rules: l.Options, Set: set, Run: run}
	ic := replay.NewChecker("check", rp, m.Stdin, m.Stderr, of.allowEmpty, true, !rf.quiet && isTerminal(m.Stderr))
	for _, name := range fs.Args() {
		// Issue 8 item 5: a SIGINT/SIGTERM stops the check with the
		// files checked so far; the file in progress is abandoned.
		run.StartInput(name)
		src, ok := replay.CheckInterruptibly(ctx, func() report.Source { return ic.Check(name) })
		run.EndInput(replay.InputEnd(src))
		if !ok || ctx.Err() != nil {
			break
		}
		sources = append(sources, src)
	}
	if sig, ok := interruption(ctx); ok {
		err := m.finishReports("check", &of, rs, sources)
		if ee, isExit := err.(*exitError); err != nil && (!isExit || ee.code == 2) {
			return err
		}
		return interruptedError(sig, "check")
	}
	return m.finishReports("check", &of, rs, sources)
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
	if err := checkEditContextKeys(v); err != nil {
		return nil, err
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

// runRules lists every check and rule (report.WriteRules).
func (m *Main) runRules(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rules", flag.ContinueOnError)
	format := fs.String("format", "text", "output `FORMAT`: text or json")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("rules takes no arguments")
	}
	return report.WriteRules(m.Stdout, *format == "json")
}
