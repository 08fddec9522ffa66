// Package nbwriter is the non-blocking writer ahp-tap puts in front of its
// own standard error (diagnostics, summaries, --log -) in both taps: a
// harness that never reads ahp-tap's stderr must never hold up forwarding,
// a request, or ahp-tap's exit (issue 8, items 3 and 8).
package nbwriter

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultBuffer is how many bytes a Writer holds while its output is stuck.
const DefaultBuffer = 256 << 10

// A Writer passes whole writes to an underlying writer from a goroutine of
// its own. Write copies p into a bounded buffer and returns at once; when
// the buffer is full the write is dropped whole and counted, and once the
// output moves again one line says how many writes were lost. A Writer is
// safe for concurrent use; every Write reaches the output whole, in order.
type Writer struct {
	out io.Writer
	max int

	mu      sync.Mutex    // guards queue, size, closed, lost
	queue   [][]byte      // writes waiting for the goroutine, in order
	size    int           // bytes in queue
	closed  bool          // Close has run: later writes are dropped
	lost    uint64        // writes dropped since the last report
	wake    chan struct{} // has room for one token: queue is not empty or the writer is closed
	done    chan struct{} // closed when the goroutine has written everything and ended
	dropped atomic.Uint64 // writes dropped in all
}

// New starts a Writer to out holding at most max bytes (0: DefaultBuffer).
func New(out io.Writer, max int) *Writer {
	if max <= 0 {
		max = DefaultBuffer
	}
	w := &Writer{out: out, max: max, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.loop()
	return w
}

// Write queues a copy of p. It never blocks and never fails: a write that
// does not fit is dropped (see Dropped).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed || w.size+len(p) > w.max {
		w.lost++
		w.mu.Unlock()
		w.dropped.Add(1)
		return len(p), nil
	}
	w.queue = append(w.queue, append([]byte(nil), p...))
	w.size += len(p)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// Dropped returns how many writes were dropped because the output was stuck
// (or the Writer closed).
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Close stops taking writes and waits up to d for what is queued to be
// written. It reports whether everything was; when the output is stuck the
// rest is abandoned (the goroutine ends with the process). Close may be
// called more than once; every call waits up to d.
func (w *Writer) Close(d time.Duration) bool {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
		return true
	case <-t.C:
		return false
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	for range w.wake {
		for {
			w.mu.Lock()
			q, lost, closed := w.queue, w.lost, w.closed
			w.queue, w.size = nil, 0
			if len(q) > 0 && lost > 0 {
				w.lost = 0
			}
			w.mu.Unlock()
			if len(q) == 0 {
				if closed {
					return
				}
				break
			}
			if lost > 0 {
				fmt.Fprintf(w.out, "ahp-tap: %d diagnostic writes were dropped: standard error was not being read\n", lost)
			}
			for _, p := range q {
				w.out.Write(p)
			}
		}
	}
}
