package main

// replay --select EXPR --write-capture FILE (issue 24 item 4): a smaller
// capture holding only the selected exchanges (capture.Selection), which
// replays with the same findings for what it kept. See
// docs/capture-format.md#selecting.

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/replay"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// writeSelected writes to path (created 0600, no symlink followed) the
// segments of the capture inputs that hold a selected exchange: their
// headers and notes, the selected exchanges' frames, every exchange of the
// same event (a retry is judged against its first delivery) and the
// hooks/capabilities exchanges (what a response is judged against).
// f is the file, created by createSelected.
func (m *Main) writeSelected(rp *replay.Replayer, f *os.File, path string, terms []capture.SelectTerm, inputs []string) error {
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	kept := 0
	for _, name := range inputs {
		n, err := m.selection(rp, terms).Write(enc, func() (*capture.Reader, func(), error) { return m.openCapture(name) })
		if err != nil {
			f.Close()
			os.Remove(path) // a partial cut is no capture to replay
			return usageError("--write-capture: %s: %v", name, err)
		}
		kept += n
	}
	if err := f.Close(); err != nil {
		return usageError("--write-capture: %v", err)
	}
	printable.Fprintf(m.Stderr, "ahp-tap replay: wrote %d selected exchange(s) to %s\n", kept, path)
	return nil
}

// createSelected creates the --write-capture file (nil without one) before
// the replay, so that a path refused (a symlink, a directory, one of the
// inputs) is exit 2 at once.
func (m *Main) createSelected(path string, inputs []string) (*os.File, error) {
	if err := output.RefuseInputs([][2]string{{"--write-capture", path}}, inputs); err != nil {
		return nil, usageError("%v", err)
	}
	if path == "" {
		return nil, nil
	}
	f, err := output.CreateFile(path, m.Stderr)
	if err != nil {
		return nil, usageError("--write-capture: %v", err)
	}
	return f, nil
}

// openCapture opens a capture input for one more read.
func (m *Main) openCapture(name string) (*capture.Reader, func(), error) {
	in, err := replay.OpenInput(name, m.Stdin, m.Stderr, false)
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
func (m *Main) selection(rp *replay.Replayer, terms []capture.SelectTerm) *capture.Selection {
	stores := capture.NewStores()
	return &capture.Selection{Terms: terms, Session: func(h *capture.Header, sink tap.Sink) (*tap.Session, error) {
		cfg, err := h.Config(rp.Config, replay.OverridesOf(rp.Set))
		if err != nil {
			return nil, err
		}
		cfg.Events = stores.For(h)
		return tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(rp.Rules),
			SharedEvents: h.State != "", MaxLine: replay.MaxLine, Sink: sink}), nil
	}}
}
