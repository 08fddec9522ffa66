package report

import (
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/tap"
)

// ConsoleBuffer is how many findings a Console holds while its writer
// catches up; beyond that they are dropped and counted.
const ConsoleBuffer = 1024

// consoleCloseWait bounds how long Close waits for a console whose writer
// is stuck (a terminal stopped with ^S, a full pipe nobody reads).
const consoleCloseWait = 2 * time.Second

// ConsoleLine renders a finding for people on one line, prefixed
// "ahp-tap ▸ " (the prefix that tells ahp-tap's lines from a backend's on a
// shared stderr), its level in colour when colour is set. What came from
// the wire or a log (the connection's name, pointers, messages) is made
// printable (internal/printable), so the only control sequences in the
// line are the colour's own; the line after the prefix is guarded like a
// line of its own (tail prints it without the prefix).
func ConsoleLine(f tap.Finding, colour bool) string {
	var b strings.Builder
	b.WriteString("ahp-tap ▸ ")
	head := f.Location()
	if f.Conn != "" {
		head = f.Conn + " " + head
	}
	b.WriteString(printable.Line(head))
	body := printable.Line(f.Body())
	if colour {
		lvl := f.Level.String()
		code := map[tap.Level]string{tap.Error: "1;31", tap.Warn: "33", tap.Info: "36"}[f.Level]
		if code != "" && strings.HasPrefix(body, lvl) {
			body = "\x1b[" + code + "m" + lvl + "\x1b[0m" + body[len(lvl):]
		}
	}
	b.WriteString(body)
	b.WriteString("\n")
	return b.String()
}

// UseColour reports whether w is a terminal that wants colour: a TTY, with
// NO_COLOR unset or empty (https://no-color.org) and TERM not "dumb".
func UseColour(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || !isatty.IsTerminal(f.Fd()) {
		return false
	}
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// A Console is a tap.Sink that prints findings as readable lines
// (ConsoleLine) on a writer, usually standard error. Like Log it never
// blocks the caller: lines go through a bounded buffer to a writer
// goroutine, and when it is full they are dropped and counted. A nil
// *Console discards everything.
type Console struct {
	w       io.Writer
	colour  bool
	in      chan tap.Finding
	done    chan struct{}
	dropped atomic.Uint64
	mu      sync.RWMutex // serialises Write against Close
	closed  bool
}

// NewConsole returns a console writing to w, in colour when colour is set.
func NewConsole(w io.Writer, colour bool) *Console {
	c := &Console{w: w, colour: colour, in: make(chan tap.Finding, ConsoleBuffer), done: make(chan struct{})}
	go c.run()
	return c
}

func (c *Console) run() {
	defer close(c.done)
	for f := range c.in {
		io.WriteString(c.w, ConsoleLine(f, c.colour))
	}
}

// Write implements tap.Sink. It never blocks.
func (c *Console) Write(f tap.Finding) {
	if c == nil {
		return
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return
	}
	select {
	case c.in <- f:
	default:
		c.dropped.Add(1)
	}
}

// Dropped is how many findings were not printed because the buffer was full.
func (c *Console) Dropped() uint64 {
	if c == nil {
		return 0
	}
	return c.dropped.Load()
}

// Close prints what is buffered, waiting at most a bounded time for a
// stuck writer. It is idempotent.
func (c *Console) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.in)
	}
	c.mu.Unlock()
	select {
	case <-c.done:
	case <-time.After(consoleCloseWait):
	}
}
