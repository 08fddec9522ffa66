package replay

// replay --select EXPR --write-capture FILE (issue 24 item 4): a smaller
// capture holding only the selected exchanges (capture.Selection), which
// replays with the same findings for what it kept. See
// docs/capture-format.md#selecting.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// WriteSelection writes to f (the --write-capture file at path, created
// 0600 without following a symlink) the segments of the capture inputs
// that hold a selected exchange: their headers and notes, the selected
// exchanges' frames, every exchange of the same event (a retry is judged
// against its first delivery) and the hooks/capabilities exchanges (what
// a response is judged against). It closes f, removes it on an error (a
// partial cut is no capture to replay) and returns how many exchanges it
// kept. Inputs are read again from stdin ("-") and their notices go to
// stderr.
func (rp *Replayer) WriteSelection(f *os.File, path string, terms []capture.SelectTerm, inputs []string, stdin io.Reader, stderr io.Writer) (int, error) {
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	kept := 0
	for _, name := range inputs {
		n, err := rp.selection(terms).Write(enc, func() (*capture.Reader, func(), error) { return openCapture(name, stdin, stderr) })
		if err != nil {
			f.Close()
			os.Remove(path) // a partial cut is no capture to replay
			return 0, fmt.Errorf("--write-capture: %s: %v", name, err)
		}
		kept += n
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("--write-capture: %v", err)
	}
	return kept, nil
}

// openCapture opens a capture input for one more read.
func openCapture(name string, stdin io.Reader, stderr io.Writer) (*capture.Reader, func(), error) {
	in, err := OpenInput(name, stdin, stderr, false)
	if err != nil {
		return nil, nil, err
	}
	if in.Kind != capture.KindCapture {
		in.Close()
		return nil, nil, fmt.Errorf("is not an ahp-tap capture (--select cuts captures only)")
	}
	return capture.NewReader(in.R), in.Close, nil
}

// selection is the --select cut of one capture input: its segments'
// sessions are replay's, sharing one event store per --state directory.
func (rp *Replayer) selection(terms []capture.SelectTerm) *capture.Selection {
	stores := capture.NewStores()
	return &capture.Selection{Terms: terms, Session: func(h *capture.Header, sink tap.Sink) (*tap.Session, error) {
		cfg, err := h.Config(rp.Config, OverridesOf(rp.Set))
		if err != nil {
			return nil, err
		}
		cfg.Events = stores.For(h)
		return tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(rp.Rules),
			SharedEvents: h.State != "", MaxLine: MaxLine, Sink: sink}), nil
	}}
}
