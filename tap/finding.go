package tap

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"fmt"
	"time"
)

// Level is a finding's severity.
type Level uint8

// Severities, in increasing order.
const (
	Info Level = iota + 1
	Warn
	Error
)

// String returns "info", "warn" or "error".
func (l Level) String() string {
	switch l {
	case Info:
		return "info"
	case Warn:
		return "warn"
	case Error:
		return "error"
	}
	return "unknown"
}

// ParseLevel parses "info", "warn" or "error".
func ParseLevel(s string) (Level, error) {
	switch s {
	case "info":
		return Info, nil
	case "warn", "warning":
		return Warn, nil
	case "error":
		return Error, nil
	}
	return 0, fmt.Errorf("level %q is not info, warn or error", s)
}

// MarshalText implements encoding.TextMarshaler.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	*l = v
	return err
}

// A Finding is one violation (or notable fact) seen on the wire. Findings
// are data: a Go error means the tap itself failed, never the traffic.
type Finding struct {
	// Check is the catalogue ID (docs/CHECKS.md), e.g. "BASE-2".
	Check string `json:"check"`
	// Requirement is the AHP requirement ID(s), comma separated, or "".
	Requirement string `json:"requirement"`
	// Rule is the finer-grained rule that reported it, e.g. "BASE-1/batch".
	Rule    string `json:"rule,omitempty"`
	Level   Level  `json:"level"`
	Message string `json:"message"`
	// Pointer is a JSON Pointer into the frame ("" for the whole frame).
	Pointer string    `json:"pointer"`
	Seq     uint64    `json:"seq,omitempty"`
	Dir     Direction `json:"direction,omitempty"`
	Conn    string    `json:"conn,omitempty"`
	// Time is the time of the frame the finding is about (or of the end of
	// the stream for end-of-stream findings).
	Time time.Time `json:"frameTime,omitzero"`
	// RPCID is the JSON-RPC id as written on the wire ("\"abc\"" or "7").
	RPCID   string `json:"rpcId,omitempty"`
	EventID string `json:"eventId,omitempty"`
	// EventType is params.event.type of the frame, when it carries one.
	EventType string `json:"eventType,omitempty"`
	// Binds is the role the broken requirement binds: usually the sender
	// (Dir), but a request never answered is about the harness's frame
	// and the backend's duty.
	Binds Direction `json:"binds,omitempty"`
	// DirGuessed says the sender was guessed from the content (a standalone
	// file or an NDJSON stream without --direction).
	DirGuessed bool `json:"directionGuessed,omitempty"`
	// TraceParent is the W3C traceparent of the event's
	// org.w3c.trace_context extension, so that a finding can be joined to
	// the harness's trace.
	TraceParent string `json:"traceParent,omitempty"`
	// OlderDraft names the earlier state of the draft whose shape this
	// finding reports ("the 0.1 revision"), on the first such finding of a
	// conversation; the message already says so, and the summary gathers
	// them. Not part of any record format.
	OlderDraft string `json:"-"`
}

// String renders a finding on one line for people. It names who sent the
// frame and, when it differs, which role the requirement binds, so that a
// finding about a harness's request that the backend never answered does
// not read as the harness's fault:
//
//	#4 sent by backend: error BASE-2 at /result/protocolVersion: …
//	#8 sent by harness: error CORR-2 (binds the backend) at /id: …
func (f Finding) String() string {
	return f.Location() + f.Body()
}

// Location is the "#N sent by X: " prefix of String ("" when the finding
// is about no frame).
func (f Finding) Location() string {
	if f.Seq == 0 {
		return ""
	}
	guess := ""
	if f.DirGuessed {
		guess = " (guessed)"
	}
	return fmt.Sprintf("#%d sent by %s%s: ", f.Seq, f.Dir, guess)
}

// Body is String without Location: level, check, the bound role when it is
// not the sender, pointer and message.
func (f Finding) Body() string {
	binds := ""
	if f.Binds != 0 && f.Binds != f.Dir {
		binds = " (binds the " + f.Binds.String() + ")"
	}
	ptr := ""
	if f.Pointer != "" {
		ptr = " at " + f.Pointer
	}
	return fmt.Sprintf("%-5s %s%s%s: %s", f.Level, f.Check, binds, ptr, f.Message)
}

// RuleInfo describes a rule: a stable ID, the catalogue check it reports
// under (always exactly one), the requirement, its usual level and one line.
type RuleInfo struct {
	ID string `json:"id"`
	// Check is the catalogue check the rule reports under (one only).
	Check       vocab.CheckID `json:"check"`
	Requirement string        `json:"requirement"`
	Level       Level         `json:"level"`
	Summary     string        `json:"summary"`
}

// At builds a finding about frame f (which may be nil for end-of-stream
// findings) at the given JSON Pointer.
func (r RuleInfo) At(f *Frame, lvl Level, ptr, format string, args ...any) Finding {
	if lvl == 0 {
		lvl = r.Level
	}
	out := Finding{
		Check:       string(r.Check),
		Requirement: r.Requirement,
		Rule:        r.ID,
		Level:       lvl,
		Message:     fmt.Sprintf(format, args...),
		Pointer:     ptr,
	}
	if f != nil {
		out.Seq, out.Dir, out.Conn, out.Time = f.Seq, f.Dir, f.Conn, f.Time
		out.Binds, out.DirGuessed = f.Dir, f.DirGuessed
		out.RPCID = IDText(f.RPCID())
		if ev := f.Event(); ev != nil {
			out.EventID, _ = ev.Get("id").Text()
			out.EventType, _ = ev.Get("type").Text()
			out.TraceParent, _ = ev.Path("extensions", "org.w3c.trace_context", "traceparent").Text()
		}
	}
	return out
}

// A Rule inspects frames in order. Check must not block and must not retain f
// or anything reachable from it beyond the call; per-conversation state lives
// in the Conversation.
type Rule interface {
	Info() RuleInfo
	Check(c *Conversation, f *Frame) []Finding
}

// A Finisher is a Rule with end-of-stream duties ("expected something that
// never came"). Finish runs once, after the last frame.
type Finisher interface {
	Finish(c *Conversation) []Finding
}

// A Sink receives findings. Write must not block for long: sinks that do I/O
// buffer and drop rather than stall the engine.
type Sink interface {
	Write(Finding)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Finding)

// Write calls fn(f).
func (fn SinkFunc) Write(f Finding) { fn(f) }

// MultiSink writes each finding to every sink in order.
type MultiSink []Sink

// Write implements Sink.
func (m MultiSink) Write(f Finding) {
	for _, s := range m {
		if s != nil {
			s.Write(f)
		}
	}
}
