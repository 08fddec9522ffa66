package tap

import (
	"bytes"
	"slices"
	"time"
)

// TruncatedPrefix is how much of a stream line longer than the audit cap
// a truncated frame keeps: a truncated frame is never decoded, the prefix
// is only for people to recognise it in a log or capture.
const TruncatedPrefix = 4 << 10

// A Framer cuts the byte streams of a link into frames (the stdio binding,
// AHP-STDIO-001): one Splitter per connection and direction, frames
// numbered in the order they are cut. It never alters a byte it keeps. A
// Session has one for Stream; a transport that splits on a goroutine of
// its own (the stdio tap) asks the session for another (NewFramer), so
// both cut the same way. A Framer is not safe for concurrent use.
type Framer struct {
	max   int
	emit  func(*Frame)
	skip  func(uint64)
	seq   uint64
	split map[streamKey]*Splitter
	order []streamKey // streams in the order they started
	now   time.Time   // read time of the bytes being split
}

type streamKey struct {
	conn string
	dir  Direction
}

// NewFramer returns a framer with the session's line cap (MaxLine).
func (s *Session) NewFramer(emit func(*Frame), skip func(n uint64)) *Framer {
	return NewFramer(s.cfg.MaxLine, emit, skip)
}

// NewFramer returns a framer that caps the audit copy of a line at
// maxLine bytes (0: no cap), hands each frame to emit, and tells skip of
// each count of lines discarded after a loss (Lost; nil: not told).
func NewFramer(maxLine int, emit func(*Frame), skip func(n uint64)) *Framer {
	return &Framer{max: maxLine, emit: emit, skip: skip, split: make(map[streamKey]*Splitter)}
}

func (fr *Framer) splitter(conn string, dir Direction) *Splitter {
	k := streamKey{conn, dir}
	if sp, ok := fr.split[k]; ok {
		return sp
	}
	sp := &Splitter{Max: fr.max, Emit: func(line []byte, fm Framing, size int, truncated bool) {
		fr.seq++ // numbered here, so a frame dropped later leaves a gap
		if truncated {
			line = line[:min(len(line), TruncatedPrefix)]
		}
		fr.emit(&Frame{Seq: fr.seq, Dir: dir, Time: fr.now, Transport: Stdio, Conn: conn,
			Raw: bytes.Clone(line), Framing: fm, Size: size, Truncated: truncated})
	}}
	fr.split[k] = sp
	if len(fr.order) > 1024 && len(fr.order) > 2*len(fr.split) {
		// Streams ended since (one per process of a per_event link)
		// leave the order: it stays proportional to the open ones.
		fr.order = slices.DeleteFunc(fr.order, func(o streamKey) bool { _, open := fr.split[o]; return !open })
	}
	fr.order = append(fr.order, k)
	return sp
}

// Write consumes p, read at t from dir's stream on conn, and emits every
// line it completes. dir 0 means the stream mixes both senders (an NDJSON
// file): the session guesses each frame's sender.
func (fr *Framer) Write(conn string, dir Direction, t time.Time, p []byte) {
	sp := fr.splitter(conn, dir)
	fr.now = t
	before := sp.Skipped()
	sp.Write(p)
	fr.skipped(sp, before)
}

// Lost says bytes of dir's stream on conn were lost before the next Write
// (the audit copy was dropped): the partial line is discarded, and so is
// everything up to the next newline; each line discarded is told to skip.
func (fr *Framer) Lost(conn string, dir Direction) { fr.splitter(conn, dir).Lost() }

// End ends dir's stream on conn at time t: a last line without "\n" is
// emitted as an unterminated frame (AHP-STDIO-001).
func (fr *Framer) End(conn string, dir Direction, t time.Time) {
	sp, ok := fr.split[streamKey{conn, dir}]
	if !ok {
		return
	}
	if !t.IsZero() {
		fr.now = t
	}
	before := sp.Skipped()
	sp.Close()
	fr.skipped(sp, before)
	delete(fr.split, streamKey{conn, dir})
}

// Close ends every stream not ended yet, in the order they started.
func (fr *Framer) Close() {
	for _, k := range fr.order {
		fr.End(k.conn, k.dir, time.Time{})
	}
	fr.order = nil
}

func (fr *Framer) skipped(sp *Splitter, before int) {
	if n := sp.Skipped() - before; n > 0 && fr.skip != nil {
		fr.skip(uint64(n))
	}
}
