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

	"github.com/ahp-tap/ahp-tap/capture"
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
			if errors.Is(err, os.ErrNotExist) && *follow {
				// Issue 21 item 7: like tail -F, wait for a log that a
				// tap has not created yet.
				printable.Fprintf(m.Stderr, "ahp-tap tail: %s does not exist yet; waiting for it\n", name)
				tl.waiting = true
				logs = append(logs, tl)
				continue
			}
			if err != nil {
				return usageError("tail: %v", err)
			}
			defer f.Close()
			// A signal ends a read that waits (a FIFO, a pipe): closing a
			// pollable file ends its Read (issue 28 item 16).
			defer context.AfterFunc(ctx, func() { f.Close() })()
			if err := notALog(f, name); err != nil {
				return err
			}
			tl.r = f
			if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
				tl.f = f
			}
		}
		logs = append(logs, tl)
	}
	defer func() {
		for _, tl := range logs {
			if c, ok := tl.r.(io.Closer); ok && tl.opened {
				c.Close()
			}
		}
	}()
	prefix := len(logs) > 1
	print := func(tl *tailedLog, line []byte) {
		tl.line++
		if tl.line == 1 {
			line = tap.TrimBOM(line) // a log saved by an editor that adds one
		}
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
			if tl.waiting {
				if err := tl.open(); err != nil {
					return err
				}
				if tl.waiting {
					continue
				}
			}
			tl.read(print, m.Stderr)
			if *follow && tl.truncated() {
				printable.Fprintf(m.Stderr, "ahp-tap tail: %s: the file shrank (truncated, e.g. by logrotate's copytruncate): following it from its start\n", tl.name)
				tl.read(print, m.Stderr)
			}
		}
		if !*follow {
			for _, tl := range logs {
				if len(tl.partial) > 0 {
					print(tl, tl.partial) // a last line without "\n"
				} else if tl.skipping {
					tl.skipped(m.Stderr)
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

// notALog refuses what tail cannot read as a violation log, with the
// command that can (issue 21 item 7: a directory printed nothing and
// exited 0; a capture printed one "skipped" line per record).
func notALog(f *os.File, name string) error {
	st, err := f.Stat()
	if err != nil {
		return usageError("tail: %v", err)
	}
	if st.IsDir() {
		return usageError("tail: %s is a directory, not a violation log (give the log file --log wrote)", name)
	}
	if !st.Mode().IsRegular() {
		return nil // a FIFO or a terminal: read as it comes
	}
	// The first line, read without moving the offset tail reads from.
	head := make([]byte, peekSize)
	n, _ := f.ReadAt(head, 0)
	head = bytes.TrimLeft(head[:n], " \t\r\n")
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	head = bytes.TrimSpace(head)
	if capture.IsHeader(head) {
		return usageError("tail: %s is a capture, not a violation log: re-check it with 'ahp-tap replay %s'", name, name)
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(head, &probe) == nil && probe["jsonrpc"] != nil {
		return usageError("tail: %s holds AHP messages, not findings: check them with 'ahp-tap check %s'", name, name)
	}
	return nil
}

// open opens a log -f is waiting for, once it exists (waiting stays true
// until then).
func (tl *tailedLog) open() error {
	f, err := os.Open(tl.name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return usageError("tail: %v", err)
	}
	if err := notALog(f, tl.name); err != nil {
		f.Close()
		return err
	}
	tl.r, tl.waiting, tl.opened = f, false, true
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		tl.f = f
	}
	return nil
}

// maxTailLine bounds the part of one line tail keeps while waiting for
// its end: a finding record is a few KiB, so a longer line is not one; it
// is skipped (one stderr line) without being held (issue 28 item 18).
const maxTailLine = 1 << 20

// A tailedLog is one log being read, with the part of a line not yet ended.
type tailedLog struct {
	// waiting says the log did not exist yet when -f started; opened that
	// open opened it since (closed at the end).
	waiting, opened bool

	name string
	r    io.Reader
	// f is the log when it is a regular file, so that -f notices when it
	// shrinks (logrotate's copytruncate); off is how far it was read.
	f   *os.File
	off int64
	// line counts the lines read; partial holds the start of a line whose
	// "\n" has not come yet, at most maxTailLine bytes; skipping says
	// the current line is longer than that and is being passed over.
	line     int
	partial  []byte
	skipping bool
	buf      []byte
}

// read prints every complete line available now; a line without its "\n"
// yet waits for the next read. Each byte is copied at most once, however
// long its line: a read appends only its own bytes to what is kept. A line
// longer than maxTailLine is skipped with one line on stderr.
func (tl *tailedLog) read(print func(*tailedLog, []byte), stderr io.Writer) {
	if tl.buf == nil {
		tl.buf = make([]byte, 64<<10)
	}
	for {
		n, err := tl.r.Read(tl.buf)
		tl.off += int64(n)
		data := tl.buf[:n]
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			switch {
			case tl.skipping:
				tl.skipped(stderr)
			case len(tl.partial) > 0:
				tl.partial = append(tl.partial, data[:i]...)
				print(tl, tl.partial)
				tl.partial = tl.partial[:0]
			default:
				print(tl, data[:i])
			}
			data = data[i+1:]
		}
		if !tl.skipping {
			if len(tl.partial)+len(data) > maxTailLine {
				tl.skipping, tl.partial = true, nil
			} else {
				tl.partial = append(tl.partial, data...)
			}
		}
		if n == 0 || err != nil {
			return
		}
	}
}

// skipped ends a line longer than maxTailLine: one line on stderr.
func (tl *tailedLog) skipped(stderr io.Writer) {
	tl.line++
	tl.skipping = false
	printable.Fprintf(stderr, "ahp-tap tail: %s:%d: a line longer than %d MiB is not a finding record, skipped\n", tl.name, tl.line, maxTailLine>>20)
}

// truncated reports whether the log is a regular file now shorter than
// what was read of it (copied and truncated by logrotate, or emptied by
// hand), and if so starts reading it again from its start.
func (tl *tailedLog) truncated() bool {
	if tl.f == nil {
		return false
	}
	st, err := tl.f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() >= tl.off {
		return false
	}
	if _, err := tl.f.Seek(0, io.SeekStart); err != nil {
		return false
	}
	tl.off, tl.line, tl.partial, tl.skipping = 0, 0, tl.partial[:0], false
	return true
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
