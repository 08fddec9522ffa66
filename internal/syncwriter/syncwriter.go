// Package syncwriter serialises writes to one writer from several
// goroutines, so that lines do not interleave.
package syncwriter

import (
	"io"
	"sync"
)

// A Writer serialises writes to W.
type Writer struct {
	mu sync.Mutex // guards W
	W  io.Writer
}

// New returns a Writer in front of w.
func New(w io.Writer) *Writer { return &Writer{W: w} }

// Write writes p to W whole, after any write under way.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}
