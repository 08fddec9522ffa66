package rules

import (
	"path/filepath"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// DocKind is what a standalone file holds.
type DocKind string

// The kinds of standalone document `ahp-tap check` understands.
const (
	DocMessage      DocKind = "message"      // one JSON-RPC message (.json)
	DocStream       DocKind = "stream"       // a stdio byte stream (.jsonl, .ndjson)
	DocRegistration DocKind = "registration" // a registration document
)

// DetectKind decides what a file holds: a registration document is
// recognised by its shape (an object with "hooks" and no "jsonrpc"), a
// stream by its extension, anything else is one message.
func DetectKind(name string, data []byte) DocKind {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson":
		return DocStream
	}
	if v, _, err := tap.ParseJSON(data); err == nil && v.Kind == tap.Object && v.Has("hooks") && !v.Has("jsonrpc") {
		return DocRegistration
	}
	return DocMessage
}

// Frames cuts a stdio byte stream into frames, in the given direction when
// every line is from one side. Direction FromHarness is assumed for lines
// holding a method and FromBackend for the rest when dir is 0.
func StreamFrames(data []byte, dir tap.Direction) []*tap.Frame {
	var out []*tap.Frame
	s := tap.Splitter{Emit: func(line []byte, fr tap.Framing, size int, truncated bool) {
		f := &tap.Frame{Dir: dir, Transport: tap.Stdio, Raw: append([]byte(nil), line...), Framing: fr, Size: size, Truncated: truncated}
		out = append(out, f)
	}}
	s.Write(data)
	s.Close()
	if dir == 0 {
		for _, f := range out {
			f.Decode()
			f.Dir = GuessDirection(f)
		}
	}
	return out
}

// GuessDirection says who most likely sent a decoded frame: messages with a
// method come from the harness, everything else from the backend.
func GuessDirection(f *tap.Frame) tap.Direction {
	f.Decode()
	f.DirGuessed = true
	switch f.Msg.(type) {
	case *tap.Request, *tap.Notification:
		return tap.FromHarness
	}
	return tap.FromBackend
}

// CheckDocument checks one standalone document with the default rules and
// returns its findings in order. A message file is one frame on no
// transport; a stream goes through the stdio framing rules; a registration
// is validated as in §5.
func CheckDocument(name string, data []byte, cfg tap.Config, opts Options) []tap.Finding {
	fs, _ := CheckDocumentRecords(name, data, cfg, opts)
	return fs
}

// CheckDocumentRecords is CheckDocument that also returns the exchange
// records of the document (what each response concluded: the effective
// edit values, or why a harness must reject it).
func CheckDocumentRecords(name string, data []byte, cfg tap.Config, opts Options) ([]tap.Finding, []tap.ExchangeRecord) {
	cfg.Partial = true
	switch DetectKind(name, data) {
	case DocRegistration:
		reg, _, _ := tap.ParseJSON(data)
		snap := cfg.Snapshot
		if snap == "" {
			snap = tap.DefaultSnapshot
		}
		return RegistrationFindingsFor(reg, snap), nil
	case DocStream:
		cfg.Transport = tap.Stdio
		e := tap.NewEngine(cfg, Default(opts))
		var out []tap.Finding
		for _, f := range StreamFrames(data, 0) {
			out = append(out, e.Feed(f)...)
		}
		out = append(out, e.Finish()...)
		return out, e.Conversation().Records()
	default:
		cfg.Transport = tap.File
		e := tap.NewEngine(cfg, Default(opts))
		f := &tap.Frame{Transport: tap.File, Raw: data}
		f.Dir = GuessDirection(f)
		out := e.Feed(f)
		out = append(out, e.Finish()...)
		return out, e.Conversation().Records()
	}
}
