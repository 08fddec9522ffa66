package tap

import "bytes"

// A Splitter cuts a byte stream into newline-delimited frames (the stdio
// binding, AHP-STDIO-001). It never drops or alters a byte of what it is
// given; it only decides where frames start and end. Lines longer than Max
// are emitted as truncated audit copies. A Splitter is not safe for
// concurrent use.
type Splitter struct {
	// Max caps the bytes kept of one line (0: no cap).
	Max int
	// Emit receives each line, without its "\n" (and without a "\r" before
	// it, which is recorded in Framing.CRLF). line is only valid during the
	// call. size is the line's full length; truncated is set when line is a
	// prefix of it.
	Emit func(line []byte, fr Framing, size int, truncated bool)

	buf     []byte // the current partial line (up to Max bytes)
	size    int    // full length of the current partial line
	last    byte   // last byte of the current partial line (kept or not)
	resync  bool   // bytes were lost: discard up to the next newline
	skipped int    // lines discarded while resyncing
}

// Write consumes p.
func (s *Splitter) Write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !s.resync {
			s.size += len(chunk)
			if len(chunk) > 0 {
				s.last = chunk[len(chunk)-1]
			}
			keep := chunk
			if s.Max > 0 && len(s.buf)+len(keep) > s.Max {
				keep = keep[:max(0, s.Max-len(s.buf))]
			}
			s.buf = append(s.buf, keep...)
		}
		if i < 0 {
			return
		}
		if s.resync {
			s.resync = false
			s.skipped++
		} else {
			s.flush(Framing{Line: true})
		}
		p = p[i+1:]
	}
}

// Lost tells the splitter that bytes were lost from the stream before the
// next Write (the audit copy was dropped): the partial line is discarded and
// so is everything up to the next newline.
func (s *Splitter) Lost() {
	s.resync = true
	s.buf, s.size, s.last = s.buf[:0], 0, 0
}

// Skipped returns how many lines were discarded after a loss.
func (s *Splitter) Skipped() int { return s.skipped }

// Close emits a final line that had no "\n" before EOF.
func (s *Splitter) Close() {
	if s.resync {
		if s.size > 0 {
			s.skipped++
		}
		return
	}
	if s.size > 0 {
		s.flush(Framing{Line: true, Unterminated: true})
	}
}

func (s *Splitter) flush(fr Framing) {
	line, size := s.buf, s.size
	// The "\r" of a "\r\n" is judged on the whole line, not on the bytes
	// kept: a line that fits Max once its "\r" is set aside is not
	// truncated (found by FuzzSplitFixtures).
	if !fr.Unterminated && size > 0 && s.last == '\r' {
		fr.CRLF = true
		size--
		line = line[:min(len(line), size)]
	}
	truncated := s.Max > 0 && size > len(line)
	s.Emit(line, fr, size, truncated)
	s.buf, s.size, s.last = s.buf[:0], 0, 0
}
