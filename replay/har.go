package replay

import (
	"bufio"
	"fmt"
	"io"

	"github.com/ahp-tap/ahp-tap/har"
	"github.com/ahp-tap/ahp-tap/tap"
)

// harSniffBytes is how much of a file replay looks at to recognise a HAR.
const harSniffBytes = 512

// IsHAR reports whether the replay input is a HAR file: --input har, or
// recognised by its first bytes.
func (rp *Replayer) IsHAR(br *bufio.Reader) bool {
	if rp.Input == "har" {
		return true
	}
	// Sniff what one read brings, up to harSniffBytes: a stream that is
	// still being written (a pipe, a FIFO) must not be waited for.
	br.Peek(1)
	head, _ := br.Peek(min(br.Buffered(), harSniffBytes))
	return rp.Input == "" && har.Sniff(head)
}

// ReplayHAR audits the AHP exchanges of a HAR file as HTTP traffic, the
// frames and notes built as the HTTP tap builds them. Entries that are not
// AHP traffic are counted and skipped.
func (rp *Replayer) ReplayHAR(r io.Reader) ([]tap.Finding, error) {
	hr, err := har.NewReader(r)
	if err != nil {
		return nil, err
	}
	cfg := rp.Config
	cfg.Transport = tap.HTTP
	var out []tap.Finding
	s := rp.Session(cfg, &out, true)
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
	rp.Close([]*tap.Session{s})
	// What the HAR does not hold (bodies not recorded): TAP-1 facts.
	fds := hr.Findings()
	out = append(out, fds...)
	rp.Run.Findings(fds)
	st := hr.Stats()
	rp.HAR = &st
	if rp.Diag != nil {
		nr := ""
		if st.NotRecorded > 0 {
			nr = fmt.Sprintf(", %d not audited (body not recorded)", st.NotRecorded)
		}
		fmt.Fprintf(rp.Diag, "ahp-tap replay: HAR with %d entries: %d AHP exchanges audited%s, %d other entries skipped\n", st.Entries, st.Audited, nr, st.Skipped-st.NotRecorded)
	}
	return out, nil
}

// HAREmpty says, in HAR words, why a HAR gave no frame to audit.
func HAREmpty(st *har.Stats) string {
	if st.NotRecorded > 0 {
		return fmt.Sprintf("the HAR's %d AHP %s no body recorded (saved without content): nothing to audit; export it with content", st.NotRecorded, plural(st.NotRecorded, "exchange has", "exchanges have"))
	}
	return fmt.Sprintf("the HAR has %d %s and no AHP exchange among them (a POST of a JSON-RPC message calling a hooks/… method); give --allow-empty to accept it", st.Entries, plural(st.Entries, "entry", "entries"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
