package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// tailPoll is how often `tail -f` looks for new lines.
const tailPoll = 200 * time.Millisecond

// runTail prints violation logs as readable lines: `ahp-tap tail [-f] LOG...`.
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
	keep := func(f tap.Finding) bool {
		if f.Level < min {
			return false
		}
		if len(checks) > 0 && !slices.ContainsFunc(checks, func(c string) bool {
			return f.Check == c || strings.HasPrefix(f.Check, c+"-")
		}) {
			return false
		}
		return len(types) == 0 || slices.Contains(types, f.EventType)
	}
	out := bufio.NewWriter(m.Stdout)
	defer out.Flush()
	var logs []*tailedLog
	for _, name := range fs.Args() {
		tl := &tailedLog{name: name}
		if name == "-" {
			tl.r = m.Stdin
		} else {
			f, err := openInterruptibly(ctx, name)
			if errors.Is(err, errInterrupted) {
				return nil // a signal while a FIFO waited for a writer
			}
			if err != nil {
				return usageError("tail: %v", err)
			}
			defer f.Close()
			// A signal ends a read that waits (a FIFO, a pipe): closing a
			// pollable file ends its Read (issue 28 item 16).
			defer context.AfterFunc(ctx, func() { f.Close() })()
			tl.r = f
		}
		logs = append(logs, tl)
	}
	prefix := len(logs) > 1
	print := func(tl *tailedLog, line []byte) {
		tl.line++
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		var f tap.Finding
		var probe struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(line, &f) != nil || f.Check == "" || json.Unmarshal(line, &probe) != nil {
			printable.Fprintf(m.Stderr, "ahp-tap: tail %s:%d: not a finding record, skipped\n", tl.name, tl.line)
			return
		}
		if !keep(f) {
			return
		}
		if prefix {
			out.WriteString(printable.Line(tl.name + ": "))
		}
		if !probe.Time.IsZero() {
			out.WriteString(probe.Time.Local().Format("15:04:05.000") + " ")
		}
		out.WriteString(strings.TrimPrefix(report.ConsoleLine(f, useColour), "ahp-tap ▸ "))
	}
	for {
		for _, tl := range logs {
			tl.read(print)
		}
		if !*follow {
			for _, tl := range logs {
				if len(tl.partial) > 0 {
					print(tl, tl.partial) // a last line without "\n"
				}
			}
			return nil
		}
		out.Flush()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(tailPoll):
		}
	}
}

// A tailedLog is one log being read, with the part of a line not yet ended.
type tailedLog struct {
	name    string
	r       io.Reader
	line    int
	partial []byte
}

// read prints every complete line available now; a line without its "\n"
// yet waits for the next read.
func (tl *tailedLog) read(print func(*tailedLog, []byte)) {
	buf := make([]byte, 64<<10)
	for {
		n, err := tl.r.Read(buf)
		data := append(tl.partial, buf[:n]...)
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			print(tl, data[:i])
			data = data[i+1:]
		}
		tl.partial = append(tl.partial[:0], data...)
		if n == 0 || err != nil {
			return
		}
	}
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

// openInterruptibly opens name for reading, giving up when ctx ends first:
// opening a FIFO blocks until a writer opens it, and a SIGTERM meanwhile
// must end the command (issue 28 item 16). The abandoned open is closed
// if it ever completes.
func openInterruptibly(ctx context.Context, name string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(name)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, errInterrupted
	}
}
