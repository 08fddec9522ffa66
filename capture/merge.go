package capture

import (
	"fmt"
	"io"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Merge replays several captures as one recording: the records of every
// file are fed, each to its own segment's session as Replay feeds them,
// in the order of their times across the files (within a file, file
// order is kept). The captures of the links of one registration, written
// by separate processes, meet this way in one time line (issue 23).
//
// A header, and a note without a time, is taken as soon as it is at the
// head of its file: it opens or ends a segment, and has no place in time.
// open is told which of rs a header came from. An error of one reader
// stops the merge and names the file by its index in rs.
func Merge(rs []*Reader, open func(i int, h *Header) (*tap.Session, error), done func(*tap.Session)) error {
	type head struct {
		sr   *segmenter
		it   Item
		have bool // it holds the next item
		eof  bool
	}
	heads := make([]*head, len(rs))
	for i := range rs {
		heads[i] = &head{sr: &segmenter{open: func(h *Header) (*tap.Session, error) { return open(i, h) },
			done: done, byConn: map[string]*segment{}}}
	}
	fill := func(i int) error {
		h := heads[i]
		for !h.have && !h.eof {
			it, err := rs[i].Next()
			if err == io.EOF {
				h.eof = true
				h.sr.end()
				return nil
			}
			if err != nil {
				return fmt.Errorf("input %d: %w", i, err)
			}
			if itemTime(it).IsZero() {
				if err := h.sr.take(it); err != nil {
					return fmt.Errorf("input %d: %w", i, err)
				}
				continue
			}
			h.it, h.have = it, true
		}
		return nil
	}
	for i := range heads {
		if err := fill(i); err != nil {
			return err
		}
	}
	for {
		next := -1
		for i, h := range heads {
			if h.have && (next < 0 || itemTime(h.it).Before(itemTime(heads[next].it))) {
				next = i
			}
		}
		if next < 0 {
			return nil
		}
		h := heads[next]
		it := h.it
		h.it, h.have = Item{}, false
		if err := h.sr.take(it); err != nil {
			return fmt.Errorf("input %d: %w", next, err)
		}
		if err := fill(next); err != nil {
			return err
		}
	}
}

// itemTime is when an item happened, for Merge: zero for a header.
func itemTime(it Item) time.Time {
	switch {
	case it.Frame != nil:
		return it.Frame.Time
	case it.Note != nil:
		return it.Note.Time
	}
	return time.Time{}
}
