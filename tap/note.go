package tap

import (
	"encoding/json"
	"time"

	"github.com/ahp-tap/ahp-tap/inject"
)

// A Note is a transport fact that is not a frame but that rules need, in
// order with the frames: a stream reached EOF, a backend process started or
// exited, an upstream could not be reached. Captures record notes so that a
// replay sees exactly what the live run saw.
type Note struct {
	Kind NoteKind  `json:"kind"`
	Time time.Time `json:"time"`
	Conn string    `json:"conn,omitempty"`
	// Dir is the sender whose stream ended, for NoteEOF.
	Dir Direction `json:"direction,omitempty"`
	// ExitCode and Signal describe a NoteExit: the exit status, or the
	// signal that killed the process (Signal set, ExitCode -1).
	ExitCode int    `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Count is the number of frames a NoteDropped says were not audited.
	Count uint64 `json:"count,omitempty"`
	// Detail is free text for people (an operational failure's cause).
	Detail string `json:"detail,omitempty"`
	// Since is, for a NoteStart of a stdio tap, when the tap's process
	// began: the harness may have written its first frames from then on,
	// before the tap could read them (their read time is later). A
	// harness that gives up at its deadline measured from its own send is
	// judged with it (CORR-3, issue 21 item 9).
	Since time.Time `json:"since,omitzero"`
	// HTTP is the HTTP envelope of a NoteHTTPResponse, or of the request
	// a NoteUpstreamFailure was about.
	HTTP *HTTPMeta `json:"http,omitempty"`
	// Fault and ID describe a NoteInjected or a NoteSwallowed: the
	// injected fault's kind (package inject) and the JSON-RPC id of the
	// request it was injected for, as sent.
	Fault string `json:"fault,omitempty"`
	ID    string `json:"id,omitempty"`
	// Scenario names the --inject-plan scenario of a NoteInjected or a
	// NoteSwallowed ("" for an --inject SPEC).
	Scenario string `json:"scenario,omitempty"`
}

// NoteKind says what a Note reports.
type NoteKind string

// Kinds of Note.
const (
	// NoteStart: a backend process (or connection) started.
	NoteStart NoteKind = "start"
	// NoteEOF: the stream from Dir ended (harness closed the backend's
	// stdin, or the backend closed its stdout).
	NoteEOF NoteKind = "eof"
	// NoteExit: the backend process exited.
	NoteExit NoteKind = "exit"
	// NoteUpstreamFailure: the backend could not be reached or failed at
	// the transport level (refused, reset, timed out).
	NoteUpstreamFailure NoteKind = "upstream_failure"
	// NoteHTTPResponse: an HTTP response that carried no JSON-RPC message
	// (an empty body, or a status other than 200): HTTP holds its status
	// and headers, and the body is not a frame.
	NoteHTTPResponse NoteKind = "http_response"
	// NoteHarnessGone: the harness abandoned the pending requests of Conn
	// (it closed the connection before an answer came, e.g. at its own
	// deadline). Not a backend fault.
	NoteHarnessGone NoteKind = "harness_gone"
	// NoteDropped: Count frames of the link were forwarded but not
	// audited (the audit queue was full, or the audit copy of a stream
	// was dropped). It is recorded where the live run took it, so that a
	// replay marks the same conversation partial and reports the same
	// TAP-1.
	NoteDropped NoteKind = "dropped"
	// NoteEnd: the whole link ended (the tap is shutting down).
	NoteEnd NoteKind = "end"
	// NoteForgotten: the tap remembers too many credentials and has begun
	// to forget the oldest (Detail says how many it keeps): one of those
	// appearing in a body from then on is not redacted. A TAP-1 fact.
	NoteForgotten NoteKind = "credentials_forgotten"
	// NoteKilled: the link ended without a clean close: the forwarding
	// process of Conn was killed (the harness signals the whole process
	// group, e.g. at its deadline or when it closes the transport). The
	// audit process that outlived it records this. Pending requests were
	// abandoned by the harness, not left unanswered by the backend.
	NoteKilled NoteKind = "killed"
	// NoteDeadline: the live tap's clock reached Time with every frame
	// read before it audited, and the deadline of a pending intercept had
	// passed by then (Session.Clock): the rules judge it now (CORR-3), not
	// when the stream ends. Recorded, so that a replay judges it at the
	// same place.
	NoteDeadline NoteKind = "deadline"
	// NoteInjected: the tap injected a fault (--inject, issue 25) for the
	// request ID: what the harness got then (Detail; a synthesized answer,
	// a drop, a delay, a closed connection) came from the tap, not the
	// backend. No rule judges the backend by it: the backend's own frames
	// are audited as it sent them.
	NoteInjected NoteKind = "injected"
	// NoteSwallowed: the backend's answer to the request ID was not
	// forwarded, because an injected fault answered in its place. The
	// answer itself is audited (and captured) as the backend sent it.
	NoteSwallowed NoteKind = "swallowed"
)

// A NoteRule is a Rule that also takes transport notes.
type NoteRule interface {
	Note(c *Conversation, n Note) []Finding
}

// Note hands a transport fact to every rule that takes notes.
func (e *Engine) Note(n Note) (out []Finding) {
	if !n.Time.IsZero() {
		e.conv.last = n.Time
	}
	if n.Kind == NoteStart && !n.Since.IsZero() && e.conv.since.IsZero() {
		e.conv.since = n.Since
	}
	if n.Kind == NoteDeadline {
		e.conv.advance(n.Time)
		defer func() { e.conv.due = e.conv.due[:0] }()
	}
	if n.Kind == NoteInjected {
		if key := inject.IDKey(json.RawMessage(n.ID)); key != "" {
			for _, x := range e.conv.Pending() {
				if x.Key == key && x.Request != nil && x.Request.Conn == n.Conn {
					x.Injected, x.InjectedAt = n.Fault, n.Time
				}
			}
		}
	}
	if n.Kind == NoteForgotten {
		fd := TapIncomplete.At(nil, Warn, "", "%s", n.Detail)
		fd.Conn, fd.Time = n.Conn, n.Time
		out = append(out, fd)
	}
	for _, r := range e.rules {
		if nr, ok := r.(NoteRule); ok {
			out = append(out, e.note(r, nr, n)...)
		}
	}
	return out
}

func (e *Engine) note(r Rule, nr NoteRule, n Note) (out []Finding) {
	defer func() {
		if p := recover(); p != nil {
			out = append(out, internalFinding(r, nil, p))
		}
	}()
	return nr.Note(e.conv, n)
}
