// Package mock turns a capture of one AHP session into a peer: the backend
// side, served to a live harness (Backend), or the harness side, played
// against a live backend (Harness). A team records one session and gets a
// regression test for either side.
//
// The package has no transport of its own: it loads a recording, matches
// incoming requests to recorded ones, builds the recorded answer for an
// incoming request, and compares a live answer with the recorded one. The
// ahp-tap command moves the bytes and feeds them to a tap.Session, so that
// the mock's traffic gets the same audit as any other.
package mock

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A Recording is a captured session, arranged as the steps of its harness.
type Recording struct {
	// Header is the capture's first header: the live run's configuration.
	Header capture.Header
	// Steps are the harness's messages, in capture order.
	Steps []*Step
	// Prelude is what the backend wrote before the harness's first
	// message (a startup banner, say), stdio only: each element one frame
	// with its recorded line ending.
	Prelude [][]byte

	// When the capture can be read again (an io.ReaderAt: a file), the
	// frames of Steps hold no bytes, only where their record is (at):
	// Frame reads them when they are needed, so a recording costs a few
	// hundred bytes per frame whatever the traffic (issue 28 item 9).
	src io.ReaderAt
	at  map[*tap.Frame]recordAt
}

type recordAt struct {
	off  int64
	line int
}

// Frame returns f with its bytes, undecoded: a frame of Steps (Request,
// Response, Output) as recorded. The caller may decode it.
func (rec *Recording) Frame(f *tap.Frame) *tap.Frame {
	if f == nil {
		return nil
	}
	l, ok := rec.at[f]
	if !ok || rec.src == nil {
		return f.Undecoded()
	}
	it, err := capture.ReadRecordAt(rec.src, l.off, l.line)
	if err != nil || it.Frame == nil {
		// The capture changed under the mock: nothing to send.
		return f.Undecoded()
	}
	g := it.Frame
	g.Seq, g.Dir, g.DirGuessed = f.Seq, f.Dir, f.DirGuessed
	return g
}

// A Step is one message of the harness and what the backend did about it.
type Step struct {
	// Request is the harness's frame: a request or a notification.
	Request *tap.Frame
	// Method and EventType name it ("hooks/intercept", "tool.before").
	Method, EventType string
	// ID is the request's JSON-RPC id (nil for a notification). Request
	// is kept undecoded (tap.Frame.Undecoded): read the id here.
	ID *tap.Value
	// notification says the message expects no answer.
	notification bool
	rec          *Recording
	// Response is the backend's answer to Request, nil for a notification
	// or a request the backend never answered.
	Response *tap.Frame
	// Output is every backend frame that followed Request on its
	// connection before the harness's next message, in order (the
	// response among them, usually), stdio only.
	Output []*tap.Frame
}

// Notification reports whether the step's message expects no answer.
func (s *Step) Notification() bool { return s.notification }

// Describe names the step for people: "#3 hooks/intercept tool.before id "evt_1"".
func (s *Step) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", s.Request.Seq, s.Method)
	if s.EventType != "" {
		b.WriteString(" " + s.EventType)
	}
	if id := s.ID; id != nil {
		b.WriteString(" id " + tap.IDText(id))
	}
	return b.String()
}

// Redacted is the error Load returns for a capture in which ahp-tap
// replaced values (credentials) by tap.RedactedCredential: a peer playing it
// would send the placeholder, not what the live peer sent.
type Redacted struct {
	// Frames are the sequence numbers of the frames holding a redaction.
	Frames []uint64
}

func (e *Redacted) Error() string {
	return fmt.Sprintf("the capture has redacted values in %d frame(s) (first #%d): a mock would send %q instead of what was recorded; pass --allow-redacted to use it anyway",
		len(e.Frames), e.Frames[0], tap.RedactedCredential)
}

// ErrEmpty is returned for a capture without a single harness message.
var ErrEmpty = errors.New("the capture holds no message from the harness")

// Load reads a capture into a Recording. A capture with redacted values
// is refused with a *Redacted error unless allowRedacted.
//
// When r is an io.ReaderAt (a file), it must stay open while the
// Recording is used: frames are read from it again when needed.
func Load(r io.Reader, allowRedacted bool) (*Recording, error) {
	cr := capture.NewReader(r)
	rec := &Recording{}
	if ra, ok := r.(io.ReaderAt); ok {
		rec.src, rec.at = ra, map[*tap.Frame]recordAt{}
	}
	var (
		started   bool
		redacted  []uint64
		last      = map[string]*Step{}            // by conn: the harness's latest message
		pending   = map[string]map[string]*Step{} // by conn, then id key: requests not answered yet
		seq       uint64
		firstConn *string // the connection whose banner is the prelude
	)
	for {
		it, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch {
		case it.Header != nil:
			if !started {
				rec.Header = *it.Header
				started = true
			}
		case it.Frame != nil:
			f := it.Frame
			if f.Seq == 0 {
				seq++
				f.Seq = seq
			}
			seq = max(seq, f.Seq)
			if bytes.Contains(f.Raw, []byte(tap.RedactedCredential)) || (f.HTTP != nil && f.HTTP.CredentialInBody > 0) {
				redacted = append(redacted, f.Seq)
			}
			f.Decode()
			if f.Dir == 0 {
				f.Dir = tap.GuessDirection(f)
			}
			// What is kept is the frame as read: its decoded tree (about
			// 24 times its bytes) is rebuilt by whoever needs it, so a
			// recording costs about its own size (issue 28 item 9: a
			// 72 MiB capture took 1.44 GB).
			decoded := f
			f = f.Undecoded()
			if rec.src != nil {
				f.Raw = nil
				rec.at[f] = recordAt{cr.Offset(), it.Line}
				if resp, ok := decoded.Msg.(*tap.Response); ok {
					// What a mock asks of a frame without reading it: is
					// it an answer.
					f.Msg = &tap.Response{ID: idClone(resp.ID)}
				}
			}
			if decoded.Dir == tap.FromHarness {
				st := &Step{Request: f, Method: decoded.Method(), rec: rec}
				_, st.notification = decoded.Msg.(*tap.Notification)
				st.ID = idClone(decoded.RPCID())
				if ev := decoded.Event(); ev != nil {
					st.EventType, _ = ev.Get("type").Text()
				}
				if _, ok := decoded.Msg.(*tap.Request); ok {
					if pending[f.Conn] == nil {
						pending[f.Conn] = map[string]*Step{}
					}
					pending[f.Conn][tap.IDKey(decoded.RPCID())] = st
				}
				rec.Steps = append(rec.Steps, st)
				last[f.Conn] = st
				continue
			}
			if resp, ok := decoded.Msg.(*tap.Response); ok {
				if st := pending[f.Conn][tap.IDKey(resp.ID)]; st != nil && st.Response == nil {
					st.Response = f
					delete(pending[f.Conn], tap.IDKey(resp.ID))
				}
			}
			if st := last[f.Conn]; st != nil {
				st.Output = append(st.Output, f)
			} else if f.Transport != tap.HTTP && (firstConn == nil || *firstConn == f.Conn) {
				// One process's banner: per_event processes each print theirs.
				firstConn = &f.Conn
				rec.Prelude = append(rec.Prelude, Line(decoded))
			}
		}
	}
	if !started {
		return nil, capture.ErrNotCapture
	}
	if len(redacted) > 0 && !allowRedacted {
		return nil, &Redacted{Frames: redacted}
	}
	if len(rec.Steps) == 0 {
		return nil, ErrEmpty
	}
	return rec, nil
}

// Line returns a stdio frame's bytes as they were on the wire: the frame
// with its line ending (none for an unterminated last line).
func Line(f *tap.Frame) []byte {
	out := bytes.Clone(f.Raw)
	switch {
	case f.Framing.Unterminated:
	case f.Framing.CRLF:
		out = append(out, '\r', '\n')
	default:
		out = append(out, '\n')
	}
	return out
}

// idClone is a JSON-RPC id without the frame it was read from.
func idClone(v *tap.Value) *tap.Value {
	if v == nil {
		return nil
	}
	return &tap.Value{Kind: v.Kind, Str: strings.Clone(v.Str), Bool: v.Bool}
}
