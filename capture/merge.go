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
	heads := make([]*mergeHead, len(rs))
	for i := range rs {
		heads[i] = &mergeHead{r: rs[i], sr: &segmenter{open: func(h *Header) (*tap.Session, error) { return open(i, h) },
			done: done, byConn: map[string]*segment{}}}
	}
	for i, h := range heads {
		if err := h.fill(); err != nil {
			return fmt.Errorf("input %d: %w", i, err)
		}
	}
	for {
		next := -1
		for i, h := range heads {
			if len(h.queue) > 0 && (next < 0 || h.key().Before(heads[next].key())) {
				next = i
			}
		}
		if next < 0 {
			return nil
		}
		h := heads[next]
		if err := h.sr.take(h.pop()); err != nil {
			return fmt.Errorf("input %d: %w", next, err)
		}
		if err := h.fill(); err != nil {
			return fmt.Errorf("input %d: %w", next, err)
		}
	}
}

// mergeLookahead bounds how many notes Merge reads past a note at the
// head of a file looking for the next frame.
const mergeLookahead = 4096

// A mergeHead is one file of a Merge: its next items, in file order.
type mergeHead struct {
	r     *Reader
	sr    *segmenter
	queue []Item // the next items; the first is timed, the rest up to the next frame or timeless item
	stops int    // frames and timeless items in queue
	eof   bool
	ended bool // sr.end ran
}

// isStop reports whether lookahead stops at it: a frame, or a timeless
// item.
func isStop(it Item) bool { return it.Frame != nil || itemTime(it).IsZero() }

func (h *mergeHead) pop() Item {
	it := h.queue[0]
	h.queue = h.queue[1:]
	if isStop(it) {
		h.stops--
	}
	return it
}

// fill takes the timeless items at the head of the file (headers, notes
// without a time: they open or end a segment, and have no place in time)
// and queues the next timed item; when that is a note, it reads on to the
// next frame (at most mergeLookahead items, and not past a timeless one).
func (h *mergeHead) fill() error {
	for {
		for len(h.queue) > 0 && itemTime(h.queue[0]).IsZero() {
			if err := h.sr.take(h.pop()); err != nil {
				return err
			}
		}
		if len(h.queue) > 0 && (h.eof || len(h.queue) >= mergeLookahead || h.stops > 0) {
			return nil
		}
		if h.eof {
			if !h.ended {
				h.ended = true
				h.sr.end()
			}
			return nil
		}
		it, err := h.r.Next()
		if err == io.EOF {
			h.eof = true
			continue
		}
		if err != nil {
			return err
		}
		h.queue = append(h.queue, it)
		if isStop(it) {
			h.stops++
		}
	}
}

// key is when the head of the file happened, for Merge: the earliest time
// among its queued items up to the next frame. A tap stamps a note when
// the audit writes it (a deadline it judged, the time its clock vouched
// for), which can be later than the frames after it, stamped when they
// arrived: ordered by its own time alone, such a note would hold back its
// file's earlier frames behind the other files' later ones.
func (h *mergeHead) key() time.Time {
	k := itemTime(h.queue[0])
	for _, it := range h.queue[1:] {
		t := itemTime(it)
		if t.IsZero() {
			break
		}
		if t.Before(k) {
			k = t
		}
	}
	return k
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
