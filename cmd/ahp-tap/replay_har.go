package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/ahp-tap/ahp-tap/har"
	"github.com/ahp-tap/ahp-tap/tap"
)

// harSniffBytes is how much of a file replay looks at to recognise a HAR.
const harSniffBytes = 512

// isHAR reports whether the replay input is a HAR file: --input har, or
// recognised by its first bytes.
func (rp *replayer) isHAR(br *bufio.Reader) bool {
	if rp.input == "har" {
		return true
	}
	// Sniff what one read brings, up to harSniffBytes: a stream that is
	// still being written (a pipe, a FIFO) must not be waited for.
	br.Peek(1)
	head, _ := br.Peek(min(br.Buffered(), harSniffBytes))
	return rp.input == "" && har.Sniff(head)
}

// replayHAR audits the AHP exchanges of a HAR file as HTTP traffic, the
// frames and notes built as the HTTP tap builds them. Entries that are not
// AHP traffic are counted and skipped.
func (rp *replayer) replayHAR(r io.Reader) ([]tap.Finding, error) {
	hr, err := har.NewReader(r)
	if err != nil {
		return nil, err
	}
	cfg := rp.flags.cfg
	cfg.Transport = tap.HTTP
	var out []tap.Finding
	s := rp.session(cfg, &out, true)
	for {
		items, err := hr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if it.Frame != nil {
				s.Frame(it.Frame)
			} else {
				s.Note(*it.Note)
			}
		}
	}
	rp.close([]*tap.Session{s})
	if rp.diag != nil {
		st := hr.Stats()
		fmt.Fprintf(rp.diag, "ahp-tap replay: HAR with %d entries: %d AHP exchanges audited, %d other entries skipped\n", st.Entries, st.Audited, st.Skipped)
	}
	return out, nil
}
