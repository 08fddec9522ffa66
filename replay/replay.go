// Package replay re-runs the rules over recorded traffic, one file at a
// time, for check and replay: NDJSON streams, captures (segment by
// segment, each with its header's settings), HAR files and single
// documents, each session's findings and exchanges fed to a report.Run.
package replay

import (
	"context"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/har"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// ErrInterrupted ends the replay of a file when a SIGINT/SIGTERM arrived;
// the findings so far are kept.
var ErrInterrupted = errors.New("interrupted")

// MaxLine caps the audited prefix of one line of a replayed stream,
// as the live taps cap theirs (issue 8 item 9): a longer line is audited
// as a truncated prefix (TAP-1) and the rest streams past.
const MaxLine = stdio.DefaultMaxAuditLine

// A Replayer re-runs the rules over one recorded file at a time (check
// and replay): NDJSON streams, captures, HAR files, single documents.
type Replayer struct {
	Config tap.Config      // what the command-line flags say
	Rules  rules.Options   // the rules' options (--spec)
	Set    map[string]bool // flags given explicitly: they override the capture
	Dir    tap.Direction   // --direction, for plain NDJSON
	Input  string          // --input: "har", or "" to recognise by content
	Diag   io.Writer       // one-line notices (stderr)
	Run    *report.Run     // the --report writers (nil: none)
	Ctx    context.Context // ends on SIGINT/SIGTERM: stop with what was read
	// Injected is the capture header's Injected of the input being
	// replayed (issue 25): its reports say the traffic was altered.
	Injected string

	// records collects the exchange records of the file being replayed,
	// frames counts its frames, forgotten the exchanges its conversations
	// no longer hold.
	Records   []tap.ExchangeRecord
	Frames    int
	Forgotten int
	// damaged, when set, is told of each capture record that cannot be
	// read; the replay goes on with the next. When nil, it stops.
	Damaged func(*capture.LineError)
	// line, when set, is the input line of the frame being recorded.
	line func() int
	// progress is the progress bar of the input being replayed, or nil.
	Progress *Progress
	// lines holds the input line of each finding of the input, in the
	// order of its findings (0: not known), for the text report.
	Lines []int
	// har is what the last HAR replayed held (replayHAR).
	HAR *har.Stats
}

// Interrupted reports whether a SIGINT/SIGTERM asked the replay to stop.
func (rp *Replayer) Interrupted() bool { return rp.Ctx != nil && rp.Ctx.Err() != nil }

// maxReplayExchanges caps the exchange records a replay keeps per input
// for the reports (each conversation keeps its most recent answered
// ones): a capture of many segments, one per event, would otherwise hold
// a record per event to the end. The oldest go first and are counted as
// omitted.
const maxReplayExchanges = 8 * tap.DefaultKeepAnswered

// keepRecords adds a session's exchange records, keeping the most recent
// maxReplayExchanges.
func (rp *Replayer) keepRecords(recs []tap.ExchangeRecord) {
	rp.Records = append(rp.Records, recs...)
	if over := len(rp.Records) - maxReplayExchanges; over > maxReplayExchanges/4 {
		rp.Forgotten += over
		rp.Records = slices.Clone(rp.Records[over:])
	}
}

// Session builds the session of one replayed file or capture segment.
// The --registration document's own findings are listed under its file
// name, not again here; a registration a capture embeds is judged by the
// Session of each segment, as each live run did.
func (rp *Replayer) Session(cfg tap.Config, out *[]tap.Finding, sharedEvents bool) *tap.Session {
	sc := rp.sessionConfig(cfg, out)
	sc.SharedEvents = sharedEvents
	return tap.NewSession(rp.Run.SessionConfig(sc, rp.lineOf))
}

// sessionConfig is the configuration of a replayed session: the rules of
// the flags, its findings appended to out, its frames counted.
func (rp *Replayer) sessionConfig(cfg tap.Config, out *[]tap.Finding) tap.SessionConfig {
	return tap.SessionConfig{Config: cfg, Rules: rules.Set(rp.Rules),
		Sink: tap.SinkFunc(func(f tap.Finding) {
			*out = append(*out, f)
			rp.Lines = append(rp.Lines, rp.Run.LineOf(f))
		}),
		Recorder:             frameCounter{&rp.Frames, rp.Progress},
		RegistrationReported: cfg.Registration != nil && cfg.Registration == rp.Config.Registration,
		// As the live taps cap theirs (issue 8 item 9): a longer line is
		// audited as a prefix (TAP-1) and the rest streams past.
		MaxLine: MaxLine}
}

// lineOf is the input line of the frame being recorded (0: not known).
func (rp *Replayer) lineOf() int {
	if rp.line == nil {
		return 0
	}
	return rp.line()
}

// Close closes the sessions of a file, in order, and keeps what they
// concluded.
func (rp *Replayer) Close(sessions []*tap.Session) {
	for _, s := range sessions {
		s.Close()
		rp.keepRecords(s.Records())
		rp.Run.Closed(s)
		rp.Forgotten += s.Forgotten()
	}
}

// CheckInterruptibly runs check and returns what it gave, or, when ctx
// ends first (SIGINT/SIGTERM), what it gives within a second of that: a
// replay notices the signal between reads; a read that blocks is
// abandoned (ok false).
func CheckInterruptibly(ctx context.Context, check func() report.Source) (report.Source, bool) {
	done := make(chan report.Source, 1)
	go func() { done <- check() }()
	select {
	case src := <-done:
		return src, true
	case <-ctx.Done():
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case src := <-done:
		return src, true
	case <-t.C:
		return report.Source{}, false
	}
}

// ReplayStream checks a plain NDJSON stream as stdio traffic. A stream from
// one side only (--direction) is an excerpt: a request without its
// response is no finding. Without --direction each line's sender is
// guessed (tap.GuessDirection).
// With excerpt (check), the stream is an excerpt whichever it is.
func (rp *Replayer) ReplayStream(r io.Reader, excerpt bool) ([]tap.Finding, error) {
	cfg := rp.Config
	cfg.Transport = tap.Stdio
	cfg.Partial = rp.Dir != 0 || excerpt
	var out []tap.Finding
	first := rp.Frames
	rp.line = func() int { return rp.Frames - first } // frame N of a stream is its line N
	defer func() { rp.line = nil }()
	s := rp.Session(cfg, &out, true)
	buf := make([]byte, 1<<16)
	for {
		if rp.Interrupted() {
			s.Close()
			return out, ErrInterrupted
		}
		n, err := r.Read(buf)
		s.Stream("", rp.Dir, time.Time{}, buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			if rp.Interrupted() {
				s.Close()
				return out, ErrInterrupted
			}
			return nil, err
		}
	}
	rp.Close([]*tap.Session{s})
	return out, nil
}

// ReplayCapture feeds a capture through one session per segment, each
// configured as the live run that wrote it was (its header), unless a
// flag says otherwise. Segments that shared a --state directory live share
// one event store (retries judged across processes); any other segment
// has one of its own, as its live run had (issue 21 item 2). Each
// segment's session is closed as soon as the segment is complete.
func (rp *Replayer) ReplayCapture(cr *capture.Reader) ([]tap.Finding, error) {
	var out []tap.Finding
	cr.Damaged = rp.Damaged
	err := rp.Run.Replay(cr, func(h *capture.Header) (tap.SessionConfig, error) {
		cfg, err := h.Config(rp.Config, OverridesOf(rp.Set))
		if err != nil {
			return tap.SessionConfig{}, err
		}
		if h.Injected != "" {
			rp.Injected = h.Injected // issue 25: every report says so
		}
		return rp.sessionConfig(cfg, &out), nil
	}, func(s *tap.Session) {
		rp.keepRecords(s.Records())
		rp.Forgotten += s.Forgotten()
	})
	if err != nil {
		if rp.Interrupted() {
			// A signal closed the file under the reader: keep what
			// the segments found so far.
			return out, ErrInterrupted
		}
		return nil, err
	}
	return out, nil
}

// OverridesOf says which capture header settings the flags given
// explicitly override.
func OverridesOf(set map[string]bool) capture.Overrides {
	return capture.Overrides{Snapshot: set["protocol-version"], Timeout: set["timeout"],
		Registration: set["registration"], Hook: set["hook"]}
}

// frameCounter is a tap.Recorder that counts the frames a session audits
// and moves the progress bar.
type frameCounter struct {
	n        *int
	progress *Progress // nil: no bar
}

func (c frameCounter) Record(f *tap.Frame) {
	*c.n++
	c.progress.frame()
}
func (c frameCounter) RecordNote(tap.Note) {}

// CheckMessagePrefix checks a message document larger than the audit cap
// from its first bytes, the whole being size bytes: it is audited as a
// truncated copy (TAP-1), as the taps audit a frame past their cap (issue
// 28 item 5).
func (rp *Replayer) CheckMessagePrefix(prefix []byte, size int64) ([]tap.Finding, []tap.ExchangeRecord) {
	cfg := rp.Config
	cfg.Partial = true
	cfg.Transport = tap.File
	var out []tap.Finding
	rp.Records, rp.Frames, rp.Forgotten = nil, 0, 0
	rp.line = func() int { return rp.Frames }
	defer func() { rp.line = nil }()
	s := rp.Session(cfg, &out, true)
	s.Frame(&tap.Frame{Transport: tap.File, Raw: prefix, Truncated: true, Size: int(size)})
	rp.Close([]*tap.Session{s})
	return out, rp.Records
}

// CheckDocument checks one standalone document (check): a message is one
// frame on no transport, a stream goes through the stdio framing rules, a
// registration is judged as in §5. A document is an excerpt of a link: a
// request without its response is no finding. It goes through a session
// like every replayed input, so its reports say the same per check.
func (rp *Replayer) CheckDocument(kind rules.DocKind, data []byte) ([]tap.Finding, []tap.ExchangeRecord) {
	cfg := rp.Config
	cfg.Partial = true
	var out []tap.Finding
	switch kind {
	case rules.DocRegistration:
		reg, _, _ := tap.ParseJSON(data)
		out = rules.Set(rp.Rules).Registration(reg, cfg.Resolved().Snapshot)
		rp.Run.Findings(out)
		return out, nil
	case rules.DocStream:
		cfg.Transport = tap.Stdio
	default:
		cfg.Transport = tap.File
	}
	rp.Records, rp.Frames, rp.Forgotten = nil, 0, 0
	rp.line = func() int { return rp.Frames } // frame N of a document is its line N
	defer func() { rp.line = nil }()
	s := rp.Session(cfg, &out, true)
	if kind == rules.DocStream {
		s.Stream("", 0, time.Time{}, data)
	} else {
		s.Frame(&tap.Frame{Transport: tap.File, Raw: data})
	}
	rp.Close([]*tap.Session{s})
	return out, rp.Records
}
