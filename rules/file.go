package rules

import (
	"path/filepath"
	"strings"
	"time"

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

// StreamFrames cuts a stdio byte stream into frames, in the given
// direction when every line is from one side; with dir 0 each line's
// sender is guessed (tap.GuessDirection).
func StreamFrames(data []byte, dir tap.Direction) []*tap.Frame {
	var out []*tap.Frame
	fr := tap.NewFramer(0, func(f *tap.Frame) { out = append(out, f) }, nil)
	fr.Write("", dir, time.Time{}, data)
	fr.Close()
	for _, f := range out {
		f.Seq = 0 // numbered by whoever checks them
		if f.Dir == 0 {
			f.Dir = tap.GuessDirection(f)
		}
	}
	return out
}

// GuessDirection says who most likely sent a decoded frame: messages with a
// method come from the harness, everything else from the backend.
func GuessDirection(f *tap.Frame) tap.Direction { return tap.GuessDirection(f) }

// CheckDocument checks one standalone document with the default rules and
// returns its findings in order. A message file is one frame on no
// transport; a stream goes through the stdio framing rules; a registration
// is validated as in §5.
func CheckDocument(name string, data []byte, cfg tap.Config, opts Options) []tap.Finding {
	fs, _ := CheckDocumentRecords(name, data, cfg, opts)
	return fs
}

// CheckMessagePrefix checks a message document larger than the audit cap
// from its first bytes, prefix, the whole being size bytes: it is audited
// as a truncated copy (TAP-1), as the taps audit a frame past their cap.
func CheckMessagePrefix(prefix []byte, size int64, cfg tap.Config, opts Options) ([]tap.Finding, []tap.ExchangeRecord) {
	var out []tap.Finding
	sc := tap.SessionConfig{Config: cfg, Rules: Set(opts), RegistrationReported: true,
		Sink: tap.SinkFunc(func(f tap.Finding) { out = append(out, f) })}
	sc.Partial, sc.Transport = true, tap.File
	s := tap.NewSession(sc)
	s.Frame(&tap.Frame{Transport: tap.File, Raw: prefix, Truncated: true, Size: int(size)})
	s.Close()
	return out, s.Records()
}

// CheckDocumentRecords is CheckDocument that also returns the exchange
// records of the document (what each response concluded: the effective
// edit values, or why a harness must reject it). The registration given in
// cfg is not judged here: its findings belong to the registration's own
// file. A registration document is judged with the --spec schema too when
// opts has one.
func CheckDocumentRecords(name string, data []byte, cfg tap.Config, opts Options) ([]tap.Finding, []tap.ExchangeRecord) {
	var out []tap.Finding
	sc := tap.SessionConfig{Config: cfg, Rules: Set(opts), RegistrationReported: true,
		Sink: tap.SinkFunc(func(f tap.Finding) { out = append(out, f) })}
	sc.Partial = true // a file is an excerpt
	kind := DetectKind(name, data)
	switch kind {
	case DocStream:
		sc.Transport = tap.Stdio
	default:
		sc.Transport = tap.File
	}
	s := tap.NewSession(sc)
	switch kind {
	case DocRegistration:
		reg, _, _ := tap.ParseJSON(data)
		return Set(opts).Registration(reg, s.Config().Snapshot), nil
	case DocStream:
		s.Stream("", 0, time.Time{}, data)
	default:
		s.Frame(&tap.Frame{Transport: tap.File, Raw: data})
	}
	s.Close()
	return out, s.Records()
}
