// Package tail prints violation logs as readable lines (`ahp-tap tail`),
// following them as they grow: a log a tap has not created yet is waited
// for, a truncated one is read again from its start, a line too long to be
// a finding record is skipped without being held.
package tail

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Config is what Run prints and how.
type Config struct {
	Names  []string  // the logs; "-" is Stdin
	Follow bool      // keep printing as the logs grow, until ctx ends
	Checks []string  // only findings of these checks or families ("": all)
	Types  []string  // only findings about events of these types
	Min    tap.Level // only findings at or above
	Colour bool      // colour the level
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer // skipped lines, waiting, truncation
}

// errInterrupted is an open that a signal (ctx) ended.
var errInterrupted = errors.New("interrupted")

// Run prints the findings of every log of cfg as readable lines, then
// (Follow) the ones appended, until ctx ends. A log that is not one (a
// directory, a capture, AHP messages) is an error naming the command that
// reads it.
func Run(ctx context.Context, cfg Config) error {
	min, checks, types, useColour, follow := cfg.Min, cfg.Checks, cfg.Types, cfg.Colour, &cfg.Follow
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
	out := bufio.NewWriter(cfg.Stdout)
	defer out.Flush()
	var logs []*tailedLog
	for _, name := range cfg.Names {
		tl := &tailedLog{name: name}
		if name == "-" {
			tl.r = cfg.Stdin
		} else {
			f, err := openInterruptibly(ctx, name)
			if errors.Is(err, errInterrupted) {
				return nil // a signal while a FIFO waited for a writer
			}
			if errors.Is(err, os.ErrNotExist) && *follow {
				// Issue 21 item 7: like tail -F, wait for a log that a
				// tap has not created yet.
				printable.Fprintf(cfg.Stderr, "ahp-tap tail: %s does not exist yet; waiting for it\n", name)
				tl.waiting = true
				logs = append(logs, tl)
				continue
			}
			if err != nil {
				return fmt.Errorf("tail: %v", err)
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
			printable.Fprintf(cfg.Stderr, "ahp-tap: tail %s:%d: not a finding record, skipped\n", tl.name, tl.line)
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
			tl.read(print, cfg.Stderr)
			if *follow && tl.truncated() {
				printable.Fprintf(cfg.Stderr, "ahp-tap tail: %s: the file shrank (truncated, e.g. by logrotate's copytruncate): following it from its start\n", tl.name)
				tl.read(print, cfg.Stderr)
			}
		}
		if !*follow {
			for _, tl := range logs {
				if len(tl.partial) > 0 {
					print(tl, tl.partial) // a last line without "\n"
				} else if tl.skipping {
					tl.skipped(cfg.Stderr)
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
		return fmt.Errorf("tail: %v", err)
	}
	if st.IsDir() {
		return fmt.Errorf("tail: %s is a directory, not a violation log (give the log file --log wrote)", name)
	}
	if !st.Mode().IsRegular() {
		return nil // a FIFO or a terminal: read as it comes
	}
	// The first line, read without moving the offset tail reads from.
	head := make([]byte, 1<<16)
	n, _ := f.ReadAt(head, 0)
	head = bytes.TrimLeft(head[:n], " \t\r\n")
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	head = bytes.TrimSpace(head)
	if capture.IsHeader(head) {
		return fmt.Errorf("tail: %s is a capture, not a violation log: re-check it with 'ahp-tap replay %s'", name, name)
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(head, &probe) == nil && probe["jsonrpc"] != nil {
		return fmt.Errorf("tail: %s holds AHP messages, not findings: check them with 'ahp-tap check %s'", name, name)
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
		return fmt.Errorf("tail: %v", err)
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
