package mock

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"github.com/ahp-tap/ahp-tap/answers"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Match says how closely an incoming request must resemble a recorded one.
type Match string

const (
	// Strict: the same method, event type and canonical content, volatile
	// fields aside.
	Strict Match = "strict"
	// Shape: the same method and event type, and content of the same
	// shape (the same members, values of the same kinds), volatile fields
	// aside: the values themselves may differ.
	Shape Match = "shape"
)

// ParseMatch parses "strict" or "shape".
func ParseMatch(s string) (Match, error) {
	switch Match(s) {
	case Strict, Shape:
		return Match(s), nil
	}
	return "", fmt.Errorf("--match %q is not strict or shape", s)
}

// A Pointer is a JSON Pointer into a message; a "*" token matches any one
// member or element (the comparison's, package answers).
type Pointer = answers.Pointer

// ParsePointer parses a JSON Pointer ("" or starting with "/").
func ParsePointer(s string) (Pointer, error) { return answers.ParsePointer(s) }

// ignored reports whether any of ps names path.
func ignored(ps []Pointer, path []string) bool { return answers.Ignored(ps, path) }

// volatile reports whether the member key, at path (the member's own path
// from the message root), differs from run to run of the same harness
// doing the same thing: ids, times, durations, trace context, the
// harness's event source and the protocol version (the mock echoes the
// incoming one).
func volatile(path []string) bool {
	key := path[len(path)-1]
	if len(path) == 2 && path[0] == "params" && key == "protocolVersion" {
		return true
	}
	if len(path) == 3 && path[0] == "params" && path[1] == "event" && key == "source" {
		return true
	}
	switch key {
	case "id", "time", "durationMs", "latencyMs", "traceparent", "tracestate":
		return true
	}
	return strings.HasSuffix(key, "Id") || strings.HasSuffix(key, "Time") || strings.HasSuffix(key, "At")
}

// Key is what a request is matched on: its method, event type and
// content by the match mode, volatile members and ignored pointers left
// out.
func Key(f *tap.Frame, m Match, ignore []Pointer) string {
	f.Decode()
	var b bytes.Buffer
	b.WriteString(f.Method())
	b.WriteByte('|')
	if t, ok := f.Event().Get("type").Text(); ok {
		b.WriteString(t)
	}
	b.WriteByte('|')
	writeKey(&b, f.Params(), []string{"params"}, m, ignore)
	return b.String()
}

func writeKey(b *bytes.Buffer, v *tap.Value, path []string, m Match, ignore []Pointer) {
	switch {
	case v == nil:
	case v.Is(tap.Object):
		b.WriteByte('{')
		keys := slices.Compact(slices.Sorted(slices.Values(v.Keys()))) // duplicates: Get takes the last
		for _, k := range keys {
			p := append(path[:len(path):len(path)], k)
			if volatile(p) || ignored(ignore, p) {
				continue
			}
			fmt.Fprintf(b, "%q:", k)
			writeKey(b, v.Get(k), p, m, ignore)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case v.Is(tap.Array):
		b.WriteByte('[')
		for i, e := range v.Arr {
			p := append(path[:len(path):len(path)], fmt.Sprint(i))
			if ignored(ignore, p) {
				continue
			}
			writeKey(b, e, p, m, ignore)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case m == Shape:
		b.WriteString(v.Kind.String())
	default:
		b.Write(v.Canonical())
	}
}

// A Matcher finds the recorded step an incoming request stands for. Each
// recorded step answers once, in recorded order; when every step of a key
// has answered, the last one answers again (a harness retrying). A Matcher
// is not safe for concurrent use.
type Matcher struct {
	rec    *Recording
	mode   Match
	ignore []Pointer
	byKey  map[[sha256.Size]byte][]*Step // by the sha256 of Key: a key is as long as the request
	used   map[*Step]bool
	types  map[string]bool // method|eventType pairs recorded
}

// NewMatcher indexes rec's harness messages.
func NewMatcher(rec *Recording, mode Match, ignore []Pointer) *Matcher {
	m := &Matcher{rec: rec, mode: mode, ignore: ignore, byKey: map[[sha256.Size]byte][]*Step{}, used: map[*Step]bool{}, types: map[string]bool{}}
	for _, st := range rec.Steps {
		k := sha256.Sum256([]byte(Key(rec.Frame(st.Request), mode, ignore))) // decoded for the key only
		m.byKey[k] = append(m.byKey[k], st)
		m.types[st.Method+"|"+st.EventType] = true
	}
	return m
}

// Find returns the recorded step f matches, or nil. Discovery
// (hooks/capabilities) has no content to match: any recorded discovery
// answers it when none matches exactly.
func (m *Matcher) Find(f *tap.Frame) *Step {
	steps := m.byKey[sha256.Sum256([]byte(Key(f, m.mode, m.ignore)))]
	if len(steps) == 0 && f.Method() == methodCapabilities {
		for _, st := range m.rec.Steps {
			if st.Method == methodCapabilities {
				steps = append(steps, st)
			}
		}
	}
	for _, st := range steps {
		if !m.used[st] {
			m.used[st] = true
			return st
		}
	}
	if len(steps) > 0 {
		return steps[len(steps)-1]
	}
	return nil
}

const methodCapabilities = "hooks/capabilities"

// JSON-RPC error codes the mock answers an unmatched request with
// (AHP errors.md; BASE-7 names them as the defined answers).
const (
	CodeMethodNotFound   = -32601
	CodeUnsupportedEvent = -32002
)

// Unmatched returns the JSON-RPC error response for a request no recorded
// exchange matches: -32601 for a method the recording never saw,
// -32002 (unsupported_event) otherwise. The id is the request's, as
// written.
func (m *Matcher) Unmatched(f *tap.Frame) []byte {
	code, msg := CodeUnsupportedEvent, "unsupported event: no recorded exchange matches this request (ahp-tap mock, --match "+string(m.mode)+")"
	known := false
	for k := range m.types {
		known = known || strings.HasPrefix(k, f.Method()+"|")
	}
	if !known {
		code, msg = CodeMethodNotFound, "method not found: the recording has no "+f.Method()+" (ahp-tap mock)"
	}
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(rawOf(f.Raw, f.RPCID()))
	fmt.Fprintf(&b, `,"error":{"code":%d,"message":%q}}`, code, msg)
	return b.Bytes()
}

// rawOf returns the bytes of v inside the document doc it was parsed from.
func rawOf(doc []byte, v *tap.Value) []byte {
	if v == nil {
		return []byte("null")
	}
	return doc[v.Start:v.End]
}

// Answer returns the recorded response of st with the incoming request's
// id substituted and, where the recorded backend echoed the recorded
// request's protocolVersion, the incoming request's. A recorded version
// that differed from the request's (a backend fault) is kept: the mock
// plays the recording, faults included. Every other byte is as recorded.
func Answer(st *Step, incoming *tap.Frame) []byte {
	resp := st.frame(st.Response) // the recording keeps its frames undecoded
	resp.Decode()
	r, ok := resp.Msg.(*tap.Response)
	if !ok {
		return resp.Raw
	}
	type splice struct {
		at   *tap.Value
		with []byte
	}
	var edits []splice
	if r.ID != nil {
		edits = append(edits, splice{r.ID, rawOf(incoming.Raw, incoming.RPCID())})
	}
	req := st.frame(st.Request)
	req.Decode()
	recV := req.Params().Get("protocolVersion")
	inV := incoming.Params().Get("protocolVersion")
	if outV := r.Result.Get("protocolVersion"); outV != nil && recV != nil && inV != nil &&
		bytes.Equal(outV.Canonical(), recV.Canonical()) {
		edits = append(edits, splice{outV, rawOf(incoming.Raw, inV)})
	}
	// Splice from the end of the document backwards, so that earlier
	// offsets stay valid.
	if len(edits) == 2 && edits[0].at.Start < edits[1].at.Start {
		edits[0], edits[1] = edits[1], edits[0]
	}
	out := bytes.Clone(resp.Raw)
	for _, e := range edits {
		out = append(out[:e.at.Start:e.at.Start], append(bytes.Clone(e.with), out[e.at.End:]...)...)
	}
	return out
}

// frame is f of st with its bytes (Recording.Frame).
func (st *Step) frame(f *tap.Frame) *tap.Frame {
	if st.rec == nil {
		return f.Undecoded()
	}
	return st.rec.Frame(f)
}
