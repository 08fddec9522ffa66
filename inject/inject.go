// Package inject decides which AHP requests get a deliberate backend fault
// when a tap runs with --inject SPEC (issue 25), and synthesizes the answer
// the tap gives in the backend's place. It does no I/O: the taps ask it
// about each decoded request and act on the answer.
//
// A spec is a comma-separated list: one fault, then selectors.
//
//	drop,event=tool.before
//	delay=2s,method=hooks/intercept,every=3
//	error=-32000
//	status=503,retry-after=1
//	invalid-deny,p=0.3
//
// Faults: drop, delay=D, error[=CODE], status=CODE[,retry-after=S] (HTTP),
// malformed, invalid-deny, unadvertised-effect, close, and for stdio banner,
// partial, crash. Selectors (all must match): event=TYPE, method=M, hook=ID
// (the tap's --hook), id=X (the JSON-RPC id or the event id), every=N (the
// Nth, 2Nth… request the other selectors match) and p=P (each such request
// with probability P, from the plan's seed).
//
// Synthesized answers hold only the request's id, its protocolVersion and
// fixed text: never a header, a body member or anything else of the
// request, so never a credential.
package inject

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ahp-tap/ahp-tap/vocab"
)

// Kind names a fault.
type Kind string

// The faults.
const (
	// Drop never answers: the backend's answer is swallowed.
	Drop Kind = "drop"
	// Delay holds the backend's answer for Fault.Delay before forwarding it.
	Delay Kind = "delay"
	// Error answers with a JSON-RPC error (Fault.Code).
	Error Kind = "error"
	// Status answers with an HTTP status and no JSON-RPC body (HTTP only).
	Status Kind = "status"
	// Malformed answers with a line that is not JSON.
	Malformed Kind = "malformed"
	// InvalidDeny answers with a valid deny next to an invalid effect: AHP
	// rejects the whole response (an operational failure, never a deny).
	InvalidDeny Kind = "invalid-deny"
	// Unadvertised answers with an effect the request did not advertise.
	Unadvertised Kind = "unadvertised-effect"
	// Close ends the harness's connection (stdio: the backend's stdout as
	// the harness reads it) once the request has been forwarded.
	Close Kind = "close"
	// Banner prints a line that is not JSON-RPC before the backend's answer
	// (stdio only).
	Banner Kind = "banner"
	// Partial writes the first half of an answer line and then ends the
	// backend's stdout, as a backend that died mid-write (stdio only).
	Partial Kind = "partial"
	// Crash kills the backend process once the request has been forwarded:
	// the harness sees what a dead backend gives, EOF (stdio only).
	Crash Kind = "crash"
)

// kinds lists the faults in the order help texts give them.
var kinds = []Kind{Drop, Delay, Error, Status, Malformed, InvalidDeny, Unadvertised, Close, Banner, Partial, Crash}

// stdioOnly and httpOnly are the faults of one binding.
var (
	stdioOnly = []Kind{Banner, Partial, Crash}
	httpOnly  = []Kind{Status}
)

// Transport names a binding, for Fault.Check.
type Transport string

// The bindings.
const (
	Stdio Transport = "stdio"
	HTTP  Transport = "http"
)

// Limits on a spec's values.
const (
	// MaxDelay bounds delay=D.
	MaxDelay = time.Hour
	// MaxEvery bounds every=N.
	MaxEvery = 1 << 30
	// maxSelector bounds a selector's text.
	maxSelector = 256
)

// A Fault is one parsed --inject SPEC.
type Fault struct {
	Kind Kind
	// Delay is delay=D's D.
	Delay time.Duration
	// Code is error=CODE's JSON-RPC error code.
	Code int
	// Status and RetryAfter are status=CODE and retry-after=S ("": none).
	Status     int
	RetryAfter string
	// Selectors: "" and 0 select everything.
	Event, Method, Hook, ID string
	Every                   int
	P                       float64 // 0: not probabilistic
	// Spec is the text it was parsed from.
	Spec string
	// Scenario names the --inject-plan scenario the fault is ("": an
	// --inject SPEC).
	Scenario string
}

// DefaultErrorCode is the JSON-RPC error code of a bare "error".
const DefaultErrorCode = -32603

// Parse parses one --inject SPEC. Its error is one line, for a usage error.
func Parse(spec string) (Fault, error) {
	f := Fault{Spec: spec}
	parts := strings.Split(spec, ",")
	if strings.TrimSpace(spec) == "" {
		return f, fmt.Errorf("--inject %q: empty (one of: %s)", spec, kindList())
	}
	seen := map[string]bool{}
	for i, part := range parts {
		key, val, hasVal := strings.Cut(strings.TrimSpace(part), "=")
		if key == "" {
			return f, fmt.Errorf("--inject %q: empty item %d", spec, i+1)
		}
		if seen[key] {
			return f, fmt.Errorf("--inject %q: %s given twice", spec, key)
		}
		seen[key] = true
		if len(val) > maxSelector {
			return f, fmt.Errorf("--inject %q: the value of %s is longer than %d bytes", spec, key, maxSelector)
		}
		if i == 0 {
			if err := f.setKind(Kind(key), val, hasVal); err != nil {
				return f, fmt.Errorf("--inject %q: %v", spec, err)
			}
			continue
		}
		if slices.Contains(kinds, Kind(key)) {
			return f, fmt.Errorf("--inject %q: one fault per spec (%s and %s); give --inject again", spec, f.Kind, key)
		}
		if err := f.setSelector(key, val, hasVal); err != nil {
			return f, fmt.Errorf("--inject %q: %v", spec, err)
		}
	}
	if f.RetryAfter != "" && f.Kind != Status {
		return f, fmt.Errorf("--inject %q: retry-after goes with status=CODE", spec)
	}
	return f, nil
}

func kindList() string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func (f *Fault) setKind(k Kind, val string, hasVal bool) error {
	f.Kind = k
	switch k {
	case Delay:
		d, err := time.ParseDuration(val)
		if !hasVal || err != nil || d <= 0 || d > MaxDelay {
			return fmt.Errorf("delay=D needs a duration D above 0 and at most %s (e.g. delay=2s), not %q", MaxDelay, val)
		}
		f.Delay = d
	case Error:
		f.Code = DefaultErrorCode
		if hasVal {
			c, err := strconv.ParseInt(val, 10, 32)
			if err != nil {
				return fmt.Errorf("error=CODE needs an integer JSON-RPC error code (e.g. error=-32000), not %q", val)
			}
			f.Code = int(c)
		}
	case Status:
		c, err := strconv.Atoi(val)
		if !hasVal || err != nil || c < 400 || c > 599 {
			return fmt.Errorf("status=CODE needs an HTTP error status from 400 to 599 (e.g. status=503), not %q", val)
		}
		f.Status = c
	case Drop, Malformed, InvalidDeny, Unadvertised, Close, Banner, Partial, Crash:
		if hasVal {
			return fmt.Errorf("%s takes no value", k)
		}
	default:
		return fmt.Errorf("unknown fault %q (one of: %s)", k, kindList())
	}
	return nil
}

func (f *Fault) setSelector(key, val string, hasVal bool) error {
	if !hasVal || val == "" {
		return fmt.Errorf("%s needs a value (%s=…)", key, key)
	}
	switch key {
	case "event":
		if !slices.ContainsFunc(vocab.Events, func(e vocab.Event) bool { return e.Name == val }) {
			return fmt.Errorf("event=%q is not an AHP event type", val)
		}
		f.Event = val
	case "method":
		if !slices.Contains(vocab.Methods, val) {
			return fmt.Errorf("method=%q is not an AHP request method (%s)", val, strings.Join(vocab.Methods, ", "))
		}
		f.Method = val
	case "hook":
		f.Hook = val
	case "id":
		f.ID = val
	case "every":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > MaxEvery {
			return fmt.Errorf("every=N needs a whole number from 1 to %d, not %q", MaxEvery, val)
		}
		f.Every = n
	case "p":
		p, err := strconv.ParseFloat(val, 64)
		if err != nil || !(p > 0 && p <= 1) {
			return fmt.Errorf("p=P needs a probability above 0 and at most 1, not %q", val)
		}
		f.P = p
	case "retry-after":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > 86400 {
			return fmt.Errorf("retry-after=S needs whole seconds from 0 to 86400, not %q", val)
		}
		f.RetryAfter = val
	default:
		return fmt.Errorf("unknown selector %q (event=, method=, hook=, id=, every=, p=, retry-after=)", key)
	}
	return nil
}

// Check says whether f can be injected on transport t.
func (f Fault) Check(t Transport) error {
	switch {
	case t == HTTP && slices.Contains(stdioOnly, f.Kind):
		return fmt.Errorf("--inject %q: %s is a stdio fault (ahp-tap stdio)", f.Spec, f.Kind)
	case t == Stdio && slices.Contains(httpOnly, f.Kind):
		return fmt.Errorf("--inject %q: %s is an HTTP fault (ahp-tap http)", f.Spec, f.Kind)
	}
	return nil
}

// Synthetic says whether the tap answers in the backend's place (the
// backend's own answer is swallowed).
func (f Fault) Synthetic() bool { return f.Kind.Synthetic() }

// Synthetic says whether the harness gets something other than the
// backend's answer for a fault of kind k: the tap answers in the
// backend's place, or never (drop).
func (k Kind) Synthetic() bool {
	switch k {
	case Drop, Error, Status, Malformed, InvalidDeny, Unadvertised, Close, Partial:
		return true
	}
	return false
}

// Answers says whether the tap sends the harness a JSON-RPC answer (or an
// HTTP status) in the backend's place for a fault of kind k: the harness
// has its answer, whenever the backend's comes.
func (k Kind) Answers() bool {
	switch k {
	case Error, Status, Malformed, InvalidDeny, Unadvertised:
		return true
	}
	return false
}

// A Request is what the decision reads of one request from the harness.
type Request struct {
	Method    string
	ID        json.RawMessage // the JSON-RPC id as sent
	EventType string
	EventID   string
	// ProtocolVersion is params.protocolVersion, echoed in synthesized
	// results ("" when absent or not a short string).
	ProtocolVersion string
	// Advertised are params.capabilities.effects.
	Advertised []string
}

// Decode reads a Request from one JSON-RPC message. ok is false for
// anything that is not a request with an id (a notification, a response,
// a batch, not JSON): only requests get faults.
func Decode(msg []byte) (r Request, ok bool) {
	var m struct {
		Method *string          `json:"method"`
		ID     json.RawMessage  `json:"id"`
		Params *json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method == nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return r, false
	}
	if m.ID[0] != '"' && (m.ID[0] < '0' || m.ID[0] > '9') && m.ID[0] != '-' {
		return r, false // not a JSON-RPC id: not a request the harness can match an answer to
	}
	r.Method, r.ID = *m.Method, m.ID
	if m.Params == nil {
		return r, true
	}
	var p struct {
		ProtocolVersion any `json:"protocolVersion"`
		Event           *struct {
			ID   any `json:"id"`
			Type any `json:"type"`
		} `json:"event"`
		Capabilities *struct {
			Effects []any `json:"effects"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(*m.Params, &p) != nil {
		return r, true
	}
	if v, ok := p.ProtocolVersion.(string); ok && len(v) <= 64 {
		r.ProtocolVersion = v
	}
	if p.Event != nil {
		r.EventType, _ = p.Event.Type.(string)
		r.EventID, _ = p.Event.ID.(string)
	}
	if p.Capabilities != nil {
		for _, e := range p.Capabilities.Effects {
			if s, ok := e.(string); ok {
				r.Advertised = append(r.Advertised, s)
			}
		}
	}
	return r, true
}

// idText is the id as a selector compares it: a string's value, a
// number's text.
func (r Request) idText() string {
	var s string
	if json.Unmarshal(r.ID, &s) == nil {
		return s
	}
	return string(r.ID)
}

// A Plan decides, request by request, which fault applies. It is safe for
// concurrent use; its decisions depend only on its faults, its seed and the
// order of the requests it is asked about.
type Plan struct {
	faults []Fault
	hook   string
	seed   uint64

	mu    sync.Mutex
	seen  []int        // per fault: requests its selectors matched
	rngs  []*rand.Rand // per fault with p=
	count int          // faults injected
}

// NewPlan returns the plan of faults for a tap whose hook is hook ("": none
// given). seed drives every p= selector: the same seed and the same
// requests give the same decisions.
func NewPlan(faults []Fault, hook string, seed uint64) *Plan {
	p := &Plan{faults: faults, hook: hook, seed: seed, seen: make([]int, len(faults)), rngs: make([]*rand.Rand, len(faults))}
	for i := range faults {
		if faults[i].P > 0 {
			p.rngs[i] = rand.New(rand.NewPCG(seed, uint64(i)))
		}
	}
	return p
}

// Faults are the plan's faults.
func (p *Plan) Faults() []Fault { return p.faults }

// Scenarios names the plan's --inject-plan scenarios, in order (nil:
// none).
func (p *Plan) Scenarios() []string {
	var out []string
	for _, f := range p.faults {
		if f.Scenario != "" {
			out = append(out, f.Scenario)
		}
	}
	return out
}

// Seed is the plan's seed.
func (p *Plan) Seed() uint64 { return p.seed }

// Probabilistic says whether a fault of the plan has p=.
func (p *Plan) Probabilistic() bool {
	return slices.ContainsFunc(p.faults, func(f Fault) bool { return f.P > 0 })
}

// Decide says which fault, if any, request r gets: the first fault of the
// plan whose selectors all match it. Every fault whose selectors match
// counts r for its every=N, whichever fault is injected.
func (p *Plan) Decide(r Request) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var (
		chosen Fault
		found  bool
	)
	for i, f := range p.faults {
		if !f.matches(r, p.hook) {
			continue
		}
		p.seen[i]++
		hit := f.Every == 0 || p.seen[i]%f.Every == 0
		if hit && f.P > 0 {
			hit = p.rngs[i].Float64() < f.P
		}
		if hit && !found {
			chosen, found = f, true
		}
	}
	if found {
		p.count++
	}
	return chosen, found
}

// Injected is how many faults the plan has decided so far.
func (p *Plan) Injected() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

func (f Fault) matches(r Request, hook string) bool {
	switch {
	case f.Method != "" && f.Method != r.Method,
		f.Event != "" && f.Event != r.EventType,
		f.Hook != "" && f.Hook != hook,
		f.ID != "" && f.ID != r.idText() && f.ID != r.EventID:
		return false
	}
	return true
}

// Notice is the loud line a tap prints on stderr and records when faults
// are on (issue 25: "faults injected: traffic was altered on purpose").
const Notice = "faults injected: traffic was altered on purpose"

// Banner is the line a tap prints on stderr at its start when plan is on.
func (p *Plan) Banner() string {
	specs := make([]string, len(p.faults))
	for i, f := range p.faults {
		specs[i] = f.Spec
		if f.Scenario != "" {
			specs[i] = f.Scenario + ": " + f.Spec
		}
	}
	s := fmt.Sprintf("%s (--inject %s)", Notice, strings.Join(specs, "; "))
	if p.Probabilistic() {
		s += fmt.Sprintf("; --seed %d reproduces it", p.seed)
	}
	return s
}

// BannerLine is the text a Banner fault prints on stdout.
const BannerLine = "ahp-tap injected banner: this line is not JSON-RPC"

// Answer is the JSON-RPC answer the tap sends in the backend's place for
// f, without the line's "\n"; nil when f has no body of its own (drop,
// delay, status, close, banner, crash).
func Answer(f Fault, r Request) []byte {
	id := r.ID
	version := r.ProtocolVersion
	switch f.Kind {
	case Error:
		return marshal(map[string]any{"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": f.Code, "message": "injected by ahp-tap (--inject " + string(f.Kind) + ")"}})
	case Malformed:
		return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"protocolVersion":` + "ahp-tap injected malformed frame")
	case InvalidDeny:
		return marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"protocolVersion": version,
			"effects": []any{
				map[string]any{"type": vocab.EffectDeny, "reason": "injected by ahp-tap: a valid deny next to an invalid effect"},
				map[string]any{"type": 42},
			}}})
	case Unadvertised:
		return marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"protocolVersion": version,
			"effects": []any{unadvertised(r.Advertised)}}})
	case Partial:
		whole := marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"protocolVersion": version, "effects": []any{}}})
		return whole[:len(whole)/2]
	}
	return nil
}

// unadvertised is an effect not among advertised.
func unadvertised(advertised []string) map[string]any {
	candidates := []map[string]any{
		{"type": vocab.EffectModify, "target": "input", "operation": "merge", "value": map[string]any{"injected": true}},
		{"type": vocab.EffectAsk, "reason": "injected by ahp-tap"},
		{"type": vocab.EffectMessage, "message": "injected by ahp-tap"},
	}
	for _, c := range candidates {
		if !slices.Contains(advertised, c["type"].(string)) {
			return c
		}
	}
	return candidates[0]
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of strings, numbers and raw ids
	}
	return b
}

// Describe is the one line a note says about a fault injected for r.
func Describe(f Fault, r Request) string {
	s := fmt.Sprintf("injected %s for %s id %s", f.Kind, clip(r.Method), clip(r.idText()))
	if r.EventType != "" {
		s += " (" + clip(r.EventType) + ")"
	}
	switch f.Kind {
	case Delay:
		s += fmt.Sprintf(": the backend's answer is held %s", f.Delay)
	case Error:
		s += fmt.Sprintf(": answered JSON-RPC error %d in the backend's place", f.Code)
	case Status:
		s += fmt.Sprintf(": answered HTTP %d in the backend's place", f.Status)
		if f.RetryAfter != "" {
			s += " with Retry-After " + f.RetryAfter
		}
	case Drop:
		s += ": never answered (the backend's answer is swallowed)"
	case Malformed, InvalidDeny, Unadvertised, Partial:
		s += ": answered in the backend's place (the backend's answer is swallowed)"
	case Close:
		s += ": the harness's connection is closed"
	case Banner:
		s += ": a banner line before the backend's answer"
	case Crash:
		s += ": the backend process is killed"
	}
	return s + " [" + Notice + "]"
}

// clip bounds a peer's text in a note: at most 80 bytes, printable ASCII.
func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

// IDKey is a JSON-RPC id as a map key ("" for a missing or null id, or one
// that is not a string or a number). Ids are never coerced: 1, 1.0 and "1"
// are three ids; a string is its value, however it is escaped.
func IDKey(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return "s:" + x
	case float64:
		return "n:" + strings.TrimSpace(string(raw))
	}
	return ""
}

// ResponseID is the id key (IDKey) of a JSON-RPC response message: "" when
// msg is not one (a request, a notification, not JSON).
func ResponseID(msg []byte) string {
	var m struct {
		Method *json.RawMessage `json:"method"`
		ID     json.RawMessage  `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method != nil {
		return ""
	}
	return IDKey(m.ID)
}

// MaxPlanBytes bounds an --inject-plan file.
const MaxPlanBytes = 1 << 20

// maxScenarios bounds the scenarios of a plan, and maxScenarioName the
// length of a scenario's name.
const (
	maxScenarios    = 256
	maxScenarioName = 64
)

// ParsePlan parses an --inject-plan file: a JSON object whose
// "scenarios" list names each fault,
//
//	{"scenarios": [{"name": "drop-first", "inject": "drop,id=evt_1"}, …]}
//
// each "inject" a SPEC as --inject takes it, checked for transport t.
// Names are unique, 1 to 64 printable ASCII characters. Its error is one
// line, for a usage error.
func ParsePlan(data []byte, t Transport) ([]Fault, error) {
	var doc struct {
		Scenarios []struct {
			Name   *string `json:"name"`
			Inject *string `json:"inject"`
		} `json:"scenarios"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("--inject-plan: not a plan: %s (want {\"scenarios\": [{\"name\": …, \"inject\": SPEC}, …]})", oneLine(err.Error()))
	}
	if dec.More() {
		return nil, fmt.Errorf("--inject-plan: more than one JSON value")
	}
	switch {
	case len(doc.Scenarios) == 0:
		return nil, fmt.Errorf("--inject-plan: no scenarios")
	case len(doc.Scenarios) > maxScenarios:
		return nil, fmt.Errorf("--inject-plan: %d scenarios, at most %d", len(doc.Scenarios), maxScenarios)
	}
	seen := map[string]bool{}
	var out []Fault
	for i, sc := range doc.Scenarios {
		if sc.Name == nil || sc.Inject == nil {
			return nil, fmt.Errorf("--inject-plan: scenario %d needs a \"name\" and an \"inject\" SPEC", i+1)
		}
		name := *sc.Name
		if err := scenarioName(name); err != nil {
			return nil, fmt.Errorf("--inject-plan: scenario %d: %v", i+1, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("--inject-plan: scenario %q given twice", name)
		}
		seen[name] = true
		f, err := Parse(*sc.Inject)
		if err == nil {
			err = f.Check(t)
		}
		if err != nil {
			return nil, fmt.Errorf("--inject-plan: scenario %q: %v", name, err)
		}
		f.Scenario = name
		out = append(out, f)
	}
	return out, nil
}

// scenarioName checks a scenario's name.
func scenarioName(name string) error {
	if name == "" || len(name) > maxScenarioName {
		return fmt.Errorf("a name is 1 to %d characters", maxScenarioName)
	}
	for _, r := range name {
		if r < 0x21 || r > 0x7e {
			return fmt.Errorf("name %q: printable ASCII without spaces only", name)
		}
	}
	return nil
}

// oneLine keeps the first line of s, clipped.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return clip(s)
}
