package tap

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// HTTPConn is the label of the n-th harness connection of an HTTP tap or
// mock: "http-conn:<n>". It names a connection, not a protocol version:
// captures written before issue 21 item 11 say "http/<n>", which read as
// HTTP/2 in a console line; replay takes any label as it is.
func HTTPConn(n uint64) string { return fmt.Sprintf("http-conn:%d", n) }

// Direction says which peer sent a frame.
type Direction uint8

// The two directions of an AHP link. The harness sends requests and
// notifications; the backend sends responses (and, on stdio, anything else it
// prints to stdout).
const (
	FromHarness Direction = iota + 1
	FromBackend
)

// String returns "harness" or "backend": the sender.
func (d Direction) String() string {
	switch d {
	case FromHarness:
		return "harness"
	case FromBackend:
		return "backend"
	}
	return "unknown"
}

// ParseDirection parses "harness" or "backend".
func ParseDirection(s string) (Direction, error) {
	switch s {
	case "harness":
		return FromHarness, nil
	case "backend":
		return FromBackend, nil
	}
	return 0, fmt.Errorf("direction %q is neither harness nor backend", s)
}

// MarshalText implements encoding.TextMarshaler.
func (d Direction) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Direction) UnmarshalText(b []byte) error {
	v, err := ParseDirection(string(b))
	*d = v
	return err
}

// Transport names the binding a frame travelled on.
type Transport string

// The bindings ahp-tap sees. File is a standalone message checked by
// `ahp-tap check`: no transport rules apply to it.
const (
	Stdio Transport = "stdio"
	HTTP  Transport = "http"
	File  Transport = "file"
)

// Framing records how a line-framed (stdio) frame ended. The zero value
// means "not line framed" (an HTTP body or a standalone file).
type Framing struct {
	// Line is set for frames cut from a newline-delimited stream.
	Line bool `json:"line,omitempty"`
	// CRLF is set when the line ended with "\r\n" (the "\r" is not in Raw).
	CRLF bool `json:"crlf,omitempty"`
	// Unterminated is set for a final line that had no "\n" before EOF.
	Unterminated bool `json:"unterminated,omitempty"`
}

// HTTPMeta is what an HTTP frame's envelope said. Header never holds a
// credential: Authorization values are redacted before a HTTPMeta is built.
// Header is read only once the HTTPMeta is built: an adapter may share one
// between the envelopes of identical heads.
type HTTPMeta struct {
	Method string              `json:"method,omitempty"`
	URL    string              `json:"url,omitempty"`
	Status int                 `json:"status,omitempty"`
	Header map[string][]string `json:"header,omitempty"`
	// Upstream is the backend URL the tap forwarded to (reverse mode).
	Upstream string `json:"upstream,omitempty"`
	// LatencyMs is the measured upstream latency, on response frames.
	LatencyMs float64 `json:"latencyMs,omitempty"`
	// AuthorizationCount is how many Authorization headers the request had.
	AuthorizationCount int `json:"authorizationCount,omitempty"`
	// BodySize is the size of the body on the wire, in bytes. It is set on
	// every HTTP frame and HTTP note (a note's body is not recorded).
	BodySize int64 `json:"bodySize,omitempty"`
	// CredentialInBody counts the places where a credential the tap saw
	// in an Authorization header appeared in this body (AUTH-1). Each was
	// replaced by RedactedCredential in the audit copy before anything
	// was checked or written.
	CredentialInBody int `json:"credentialInBody,omitempty"`
}

// RedactedCredential replaces a credential wherever it appears in an audit
// copy (a body, a header, a URL), so that no finding, log or capture ever
// holds it (AHP-AUTH-001).
const RedactedCredential = "[ahp-tap: credential redacted]"

// A Frame is a record of what crossed the wire: the exact bytes of one
// message (one stdio line without its line ending, or one HTTP body) and,
// once decoded, a view of it. Raw is never mutated: the decoded strings of
// a frame of up to 64 KiB are slices of Raw itself, so whoever builds a
// Frame gives it bytes no one writes to again (a copy of a reused read
// buffer, never the buffer).
type Frame struct {
	Seq       uint64
	Dir       Direction
	Time      time.Time
	Transport Transport
	// Conn identifies the connection or process the frame travelled on:
	// "stdio:<pid>" for a stdio backend process, HTTPConn(n) for the n-th
	// harness connection of an HTTP tap.
	Conn    string
	Raw     []byte
	Framing Framing
	HTTP    *HTTPMeta
	// Truncated is set when Raw is only a prefix of the frame: the audit
	// copy was capped. A truncated frame is never decoded.
	Truncated bool
	// Size is the full size of the frame on the wire (len(Raw) unless Truncated).
	Size int
	// DirGuessed says Dir was guessed from the content (rules.GuessDirection).
	DirGuessed bool

	decoded bool
	// BadUTF8 is set when Raw is not valid UTF-8 (BASE-1).
	BadUTF8 bool
	// SyntaxErr is set when Raw is not one JSON value.
	SyntaxErr error
	// Tree is the decoded document, nil when it did not parse.
	Tree *Value
	// Dups lists the first MaxDuplicateKeys duplicate object keys (BASE-1);
	// DupCount counts them all.
	Dups     []DuplicateKey
	DupCount int
	// OverBound is set when the frame holds more than MaxFrameValues JSON
	// values: like a truncated frame it is forwarded whole but neither
	// decoded nor checked (TAP-1), so one frame cannot stall the audit.
	OverBound bool
	// Msg is the JSON-RPC message, nil when Tree is not a JSON object or
	// cannot be classified as a request, notification or response.
	Msg Message
}

// Decode decodes f once; later calls do nothing.
func (f *Frame) Decode() {
	if f.decoded {
		return
	}
	f.decoded = true
	if f.Size == 0 {
		f.Size = len(f.Raw)
	}
	if f.Truncated {
		return
	}
	var d Decoder
	f.Tree, f.SyntaxErr = d.parseFrozen(f.Raw) // Raw is never mutated
	// A document that parsed with no byte beyond ASCII in its strings is
	// ASCII throughout: no second pass over it.
	f.BadUTF8 = !d.ascii && !utf8.Valid(f.Raw)
	f.Dups, f.DupCount = d.Dups, d.DupCount
	if errors.Is(f.SyntaxErr, ErrTooManyValues) {
		f.SyntaxErr, f.Dups, f.DupCount, f.OverBound = nil, nil, 0, true
		return
	}
	if f.Tree != nil && f.Tree.Kind == Object {
		f.Msg = classify(f.Tree)
	}
}

// Undecoded returns a copy of f as read, before Decode: what crossed the
// wire and its metadata, without the decoded tree. A holder of many frames
// (a mock's recording) keeps them so, and decodes a copy when it needs
// one: a decoded tree costs about 24 times the frame's bytes.
func (f *Frame) Undecoded() *Frame {
	if f == nil {
		return nil
	}
	return &Frame{Seq: f.Seq, Dir: f.Dir, Time: f.Time, Transport: f.Transport, Conn: f.Conn, Raw: f.Raw,
		Framing: f.Framing, HTTP: f.HTTP, Truncated: f.Truncated, Size: f.Size, DirGuessed: f.DirGuessed}
}

// Unchecked reports whether f is forwarded but not checked: its audit copy
// was truncated, or it is past the audit work bound (OverBound). Rules
// leave such a frame alone; the engine reports it (TAP-1).
func (f *Frame) Unchecked() bool { return f.Truncated || f.OverBound }

// Message is a decoded JSON-RPC message: *Request, *Notification or *Response.
type Message interface{ isMessage() }

// A Request is a JSON-RPC request: it has an id and a method.
type Request struct {
	ID     *Value
	Method string
	Params *Value
}

// A Notification is a JSON-RPC message with a method and no id.
type Notification struct {
	Method string
	Params *Value
}

// A Response is a JSON-RPC success or error response.
type Response struct {
	ID     *Value
	Result *Value
	Error  *Value
}

func (*Request) isMessage()      {}
func (*Notification) isMessage() {}
func (*Response) isMessage()     {}

// classify sorts a JSON object into the message kinds. It is lenient on
// purpose: the envelope rule reports what is wrong, and the other rules still
// see the message for what it is most likely meant to be.
//
// A message with "result" or "error" and no "params" is a response even
// when it also carries "method" (issue 22): JSON-RPC classifies a response
// by result/error and id, and an unknown member of a response is no fault
// of its own (AHP-CORE-003), as the upstream checker holds.
func classify(o *Value) Message {
	if (o.Has("result") || o.Has("error")) && !o.Has("params") {
		return &Response{ID: o.Get("id"), Result: o.Get("result"), Error: o.Get("error")}
	}
	if m := o.Get("method"); m != nil {
		name, _ := m.Text()
		if k, ok := knownStrings[name]; ok {
			// The protocol's own method names are shared strings, not
			// slices of the frame: an exchange that keeps its method
			// does not keep the frame's bytes with it.
			name = k
		}
		if id := o.Get("id"); id != nil {
			return &Request{ID: id, Method: name, Params: o.Get("params")}
		}
		return &Notification{Method: name, Params: o.Get("params")}
	}
	if o.Has("result") || o.Has("error") || o.Has("id") {
		return &Response{ID: o.Get("id"), Result: o.Get("result"), Error: o.Get("error")}
	}
	return nil
}

// Params returns the params of a request or notification, else nil.
func (f *Frame) Params() *Value {
	switch m := f.Msg.(type) {
	case *Request:
		return m.Params
	case *Notification:
		return m.Params
	}
	return nil
}

// Method returns the method of a request or notification, else "".
func (f *Frame) Method() string {
	switch m := f.Msg.(type) {
	case *Request:
		return m.Method
	case *Notification:
		return m.Method
	}
	return ""
}

// Event returns params.event of a request or notification, else nil.
func (f *Frame) Event() *Value { return f.Params().Get("event") }

// IDKey returns a key for a JSON-RPC id that never coerces: the string "1",
// the number 1 and the number 1.0 have three different keys. It returns ""
// for an absent id.
func IDKey(id *Value) string {
	if id == nil {
		return ""
	}
	if id.Kind == Null {
		return "null"
	}
	var buf [64]byte
	return string(appendIDKey(buf[:0], id))
}

// appendIDKey appends IDKey(id) to b: a key to look up with, where
// IDKey would allocate the string (m[string(b)] does not).
func appendIDKey(b []byte, id *Value) []byte {
	if id == nil {
		return b
	}
	switch id.Kind {
	case String:
		return append(append(b, "s:"...), id.Str...)
	case Number:
		return append(append(b, "n:"...), id.Str...)
	case Null:
		return append(b, "null"...)
	}
	return append(append(b, "x:"...), id.Canonical()...)
}

// IDText renders a JSON-RPC id for people: the JSON literal as written
// ("abc" with quotes, 1 without).
func IDText(id *Value) string {
	if id == nil {
		return ""
	}
	if id.Kind == Number {
		return id.Str
	}
	return string(id.Canonical())
}

// RPCID returns the frame's JSON-RPC id, or nil.
func (f *Frame) RPCID() *Value {
	switch m := f.Msg.(type) {
	case *Request:
		return m.ID
	case *Response:
		return m.ID
	}
	return nil
}
