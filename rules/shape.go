package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ahp-tap/ahp-tap/tap"
)

// This file is a small declarative validator for JSON shapes, written for
// speed: it walks the decoded *tap.Value tree once, keeps the JSON Pointer of
// the node being checked as a stack of tokens, and renders a pointer or a
// message only when it reports a problem. A conforming frame costs no
// allocation beyond the pooled checker.
//
// Shapes are built from three pieces:
//   - an obj lists an object's fields (required, optional, forbidden), says
//     whether it is closed (unknown members are problems) and may add
//     cross-field rules;
//   - a shape is any function func(*checker, *tap.Value) that checks one
//     value; str, nonEmpty, enum, integer, boolean, objectAny, list… build them;
//   - every problem carries the catalogue check of the shape that found it,
//     so the content model reports EDIT-1/EDIT-2 wherever it is used.

// A shape checks one present value and reports what is wrong with it.
type shape func(c *checker, v *tap.Value)

// A field is one member of an object shape.
type field struct {
	name string
	req  bool   // the member must be present
	ban  bool   // the member must be absent
	val  shape  // how the member's value must look (nil: any JSON)
	why  string // why a banned member must be absent, for the message
	// older is the earlier draft whose shape a banned member's presence (or
	// a required member's absence) matches, for the hint (olderdraft.go).
	older olderDraft
}

// req, opt and ban build fields.
func req(name string, s shape) field { return field{name: name, req: true, val: s} }
func opt(name string, s shape) field { return field{name: name, val: s} }
func ban(name, why string) field     { return field{name: name, ban: true, why: why} }

// from marks a field's fault as a shape of the older draft d.
func (f field) from(d olderDraft) field { f.older = d; return f }

// An obj is the shape of a JSON object.
type obj struct {
	check  vocab.CheckID // catalogue check its problems belong to
	what   string        // what the object is, for messages ("the tool object")
	closed bool          // unknown members are problems (the spec closes it)
	// skip names members a closed object leaves to another check.
	skip   func(key string) bool
	fields []field
	// also runs after the fields: conditional and cross-field rules.
	also func(c *checker, v *tap.Value)
	// index finds a member's field without comparing its key with each
	// field's name; built on first use (fieldIndexOf), fields being
	// fixed by then.
	index atomic.Pointer[fieldIndex]
}

// A fieldIndex is a perfect hash of an object shape's field names: the
// slot of a key holds the one field whose name may equal it. Walking an
// event of 10-20 members against its 20-30 fields by comparing each
// member with each field was ~5% of the audit's time.
type fieldIndex struct {
	mul   uint32
	shift uint32
	// slots hold a field's position + 1 (0: no field); nil when the
	// fields have no perfect hash (two names alike in length and in
	// their first, middle and last bytes, or one named twice): members
	// then compares with every field.
	slots []uint8
}

// keySig sums up a key for fieldIndex: its length and its first, middle
// and last bytes.
func keySig(k string) uint32 {
	if k == "" {
		return 0
	}
	return uint32(len(k)&0xff) | uint32(k[0])<<8 | uint32(k[len(k)/2])<<16 | uint32(k[len(k)-1])<<24
}

// slot is the slot of key in ix.
func (ix *fieldIndex) slot(key string) uint32 { return keySig(key) * ix.mul >> ix.shift }

// field returns the position of the field that key names, or -1.
func (o *obj) field(ix *fieldIndex, key string) int {
	i := int(ix.slots[ix.slot(key)]) - 1
	if i >= 0 && o.fields[i].name != key {
		return -1
	}
	return i
}

// fieldIndexOf returns o's index, building it on first use (two walks
// building it at once build the same).
func (o *obj) fieldIndexOf() *fieldIndex {
	if ix := o.index.Load(); ix != nil {
		return ix
	}
	ix := buildFieldIndex(o.fields)
	o.index.Store(ix)
	return ix
}

// buildFieldIndex finds a multiplier under which the fields' keySigs fall
// into distinct slots of a table of 2 to 16 times their number.
func buildFieldIndex(fields []field) *fieldIndex {
	if len(fields) == 0 || len(fields) > 250 {
		return &fieldIndex{}
	}
	bits := 1
	for 1<<bits < 2*len(fields) {
		bits++
	}
	for extra := 0; extra < 4; extra++ {
		size := 1 << (bits + extra)
		for t := uint32(0); t < 2000; t++ {
			ix := &fieldIndex{mul: 0x9e3779b1 + 2*t*0x85ebca6b, shift: uint32(32 - bits - extra), slots: make([]uint8, size)}
			ok := true
			for i := range fields {
				sl := &ix.slots[ix.slot(fields[i].name)]
				if *sl != 0 {
					ok = false
					break
				}
				*sl = uint8(i + 1)
			}
			if ok {
				return ix
			}
		}
	}
	return &fieldIndex{}
}

// pathTok is one JSON Pointer token: a key, or an array index when idx ≥ 0.
type pathTok struct {
	key string
	idx int
}

// A checker collects problems while shapes walk a value.
type checker struct {
	base  string    // JSON Pointer of the value the walk started at
	path  []pathTok // tokens below base, innermost last
	probs []problem
}

var checkers = sync.Pool{New: func() any { return &checker{path: make([]pathTok, 0, 16)} }}

// newChecker returns a pooled checker rooted at ptr; release it with done.
func newChecker(ptr string) *checker {
	c := checkers.Get().(*checker)
	c.base, c.path, c.probs = ptr, c.path[:0], nil
	return c
}

// done returns the problems found and gives the checker back to the pool.
func (c *checker) done() []problem {
	ps := c.probs
	c.probs = nil
	checkers.Put(c)
	return ps
}

// run checks v against s, starting at ptr, and returns the problems.
func run(v *tap.Value, ptr string, s shape) []problem {
	c := newChecker(ptr)
	s(c, v)
	return c.done()
}

func (c *checker) key(k string) { c.path = append(c.path, pathTok{key: k, idx: -1}) }
func (c *checker) index(i int)  { c.path = append(c.path, pathTok{idx: i}) }
func (c *checker) pop()         { c.path = c.path[:len(c.path)-1] }

// at checks v (which may be nil, meaning absent) under key k.
func (c *checker) at(k string, v *tap.Value, s shape) {
	c.key(k)
	s(c, v)
	c.pop()
}

// ptr renders the pointer of the node being checked.
func (c *checker) ptr() string {
	if len(c.path) == 0 {
		return c.base
	}
	var b strings.Builder
	b.WriteString(c.base)
	for _, t := range c.path {
		b.WriteByte('/')
		if t.idx >= 0 {
			b.WriteString(strconv.Itoa(t.idx))
		} else {
			b.WriteString(tap.EscapePointer(t.key))
		}
	}
	return b.String()
}

// name is the member name or index the checker is at, for messages.
func (c *checker) name() string {
	if len(c.path) == 0 {
		return "the value"
	}
	t := c.path[len(c.path)-1]
	if t.idx >= 0 {
		if len(c.path) > 1 && c.path[len(c.path)-2].idx < 0 {
			return fmt.Sprintf("%q item %d", c.path[len(c.path)-2].key, t.idx)
		}
		return fmt.Sprintf("item %d", t.idx)
	}
	return strconv.Quote(t.key)
}

// report records a problem at the current node.
func (c *checker) report(check vocab.CheckID, format string, args ...any) {
	c.probs = append(c.probs, problem{check: check, ptr: c.ptr(), msg: fmt.Sprintf(format, args...)})
}

// reportAt records a problem at member k of the current node.
func (c *checker) reportAt(check vocab.CheckID, k, format string, args ...any) {
	c.key(k)
	c.report(check, format, args...)
	c.pop()
}

// olderDraft marks the problem just reported as a shape of the older
// draft d ("" leaves it unmarked).
func (c *checker) olderDraft(d olderDraft) {
	if d != "" && len(c.probs) > 0 {
		c.probs[len(c.probs)-1].older = d
	}
}

// failed reports whether any problem has been recorded since mark.
func (c *checker) failed(mark int) bool { return len(c.probs) > mark }

// mark returns a position to compare with failed.
func (c *checker) mark() int { return len(c.probs) }

// object returns the shape checking an object against o.
func (o *obj) shape() shape { return func(c *checker, v *tap.Value) { o.check1(c, v) } }

// check1 checks one value against o.
func (o *obj) check1(c *checker, v *tap.Value) {
	if !v.Is(tap.Object) {
		c.report(o.check, "%s must be %s, found %s", c.name(), o.what, v.Describe())
		return
	}
	o.members(c, v)
}

// members checks the fields of object v (known to be an object).
// One pass over the members finds each field's value (the last of
// duplicates wins, as with Get) and, in a closed object, the unknown ones.
func (o *obj) members(c *checker, v *tap.Value) {
	var buf [48]*tap.Value // event types have up to ~30 fields
	var found []*tap.Value
	if len(o.fields) <= len(buf) {
		found = buf[:len(o.fields)]
	} else {
		found = make([]*tap.Value, len(o.fields))
	}
	ix := o.fieldIndexOf()
	for _, m := range v.Obj {
		known := false
		if ix.slots != nil {
			if i := o.field(ix, m.Key); i >= 0 {
				found[i], known = m.Val, true
			}
		} else {
			for i := range o.fields {
				if o.fields[i].name == m.Key {
					found[i], known = m.Val, true
				}
			}
		}
		if o.closed && !known && (o.skip == nil || !o.skip(m.Key)) {
			c.reportAt(o.check, m.Key, "%s is closed: unknown member %q is not allowed", o.what, m.Key)
		}
	}
	for i := range o.fields {
		f := &o.fields[i]
		mv := found[i]
		switch {
		case f.ban:
			if mv != nil {
				if f.why != "" {
					c.reportAt(o.check, f.name, "%q must be absent: %s", f.name, f.why)
				} else {
					c.reportAt(o.check, f.name, "%q is not allowed in %s", f.name, o.what)
				}
				c.olderDraft(f.older)
			}
		case mv == nil:
			if f.req {
				c.reportAt(o.check, f.name, "%s must carry %q", o.what, f.name)
				c.olderDraft(f.older)
			}
		case f.val != nil:
			c.at(f.name, mv, f.val)
		}
	}
	if o.also != nil {
		o.also(c, v)
	}
}

// ---- value shapes -------------------------------------------------------

// anyJSON accepts every value.
func anyJSON(*checker, *tap.Value) {}

// str: a string.
func str(check vocab.CheckID) shape {
	return func(c *checker, v *tap.Value) {
		if !v.Is(tap.String) {
			c.report(check, "%s must be a string, found %s", c.name(), show(v))
		}
	}
}

// nonEmpty: a string of at least one character.
func nonEmpty(check vocab.CheckID) shape {
	return func(c *checker, v *tap.Value) {
		if s, ok := v.Text(); !ok || s == "" {
			c.report(check, "%s must be a non-empty string, found %s", c.name(), show(v))
		}
	}
}

// boolean: true or false.
func boolean(check vocab.CheckID) shape {
	return func(c *checker, v *tap.Value) {
		if !v.Is(tap.Bool) {
			c.report(check, "%s must be a boolean, found %s", c.name(), show(v))
		}
	}
}

// objectAny: any object (open, contents not checked).
func objectAny(check vocab.CheckID) shape {
	return func(c *checker, v *tap.Value) {
		if !v.Is(tap.Object) {
			c.report(check, "%s must be an object, found %s", c.name(), v.Describe())
		}
	}
}

// integer: an integer ≥ min (1.0 counts as an integer, Draft 2020-12). An
// integer is an integer whatever its size (2^64, 1e308), and the range is
// compared exactly (issue 22).
func integer(check vocab.CheckID, min int64) shape {
	return func(c *checker, v *tap.Value) {
		if !v.IsInteger() {
			c.report(check, "%s must be an integer, found %s", c.name(), show(v))
			return
		}
		if cmp, _ := v.CompareInt(min); cmp < 0 {
			c.report(check, "%s must be an integer ≥ %d, found %s", c.name(), min, v.Str)
		}
	}
}

// number: a number ≥ min, compared exactly (a number too large for a
// float64, 1e400, is still a number).
func number(check vocab.CheckID, min int64) shape {
	return func(c *checker, v *tap.Value) {
		cmp, ok := v.CompareInt(min)
		if !ok {
			c.report(check, "%s must be a number, found %s", c.name(), show(v))
			return
		}
		if cmp < 0 {
			c.report(check, "%s must be a number ≥ %d, found %s", c.name(), min, v.Str)
		}
	}
}

// constant: exactly the string want.
func constant(check vocab.CheckID, want string) shape {
	return func(c *checker, v *tap.Value) {
		if s, ok := v.Text(); !ok || s != want {
			c.report(check, "%s must be %q, found %s", c.name(), want, show(v))
		}
	}
}

// enum: one of the strings in set.
func enum(check vocab.CheckID, set ...string) shape {
	list := quoteList(set)
	return func(c *checker, v *tap.Value) {
		s, ok := v.Text()
		if ok {
			for _, w := range set {
				if s == w {
					return
				}
			}
		}
		c.report(check, "%s must be one of %s, found %s", c.name(), list, show(v))
	}
}

// inSet reports whether s is one of set.
func inSet(s string, set ...string) bool {
	for _, w := range set {
		if s == w {
			return true
		}
	}
	return false
}

// quoteList renders ["a","b","c"] as `"a", "b" or "c"`.
func quoteList(set []string) string {
	var b strings.Builder
	for i, s := range set {
		switch {
		case i == 0:
		case i == len(set)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(s))
	}
	return b.String()
}

// list: an array of at least min items, each checked by item (nil: any);
// unique additionally requires distinct items.
func list(check vocab.CheckID, min int, item shape) shape {
	return func(c *checker, v *tap.Value) {
		if !v.Is(tap.Array) {
			c.report(check, "%s must be an array, found %s", c.name(), v.Describe())
			return
		}
		if len(v.Arr) < min {
			c.report(check, "%s must hold at least %d item(s), found %d", c.name(), min, len(v.Arr))
		}
		if item == nil {
			return
		}
		for i, e := range v.Arr {
			c.index(i)
			item(c, e)
			c.pop()
		}
	}
}

// uniqueStrings: an array of at least min distinct strings, each checked by item.
func uniqueStrings(check vocab.CheckID, min int, item shape) shape {
	inner := list(check, min, item)
	return func(c *checker, v *tap.Value) {
		inner(c, v)
		if !v.Is(tap.Array) {
			return
		}
		for i := 1; i < len(v.Arr); i++ {
			for j := 0; j < i; j++ {
				if v.Arr[i].Kind == tap.String && v.Arr[j].Kind == tap.String && v.Arr[i].Str == v.Arr[j].Str {
					c.index(i)
					c.report(check, "%s repeats %q; items must be unique", c.name(), v.Arr[i].Str)
					c.pop()
					break
				}
			}
		}
	}
}

// has reports whether object v has member k.
func has(v *tap.Value, k string) bool { return v.Get(k) != nil }

// text returns member k of v as a string ("" when absent or not a string).
func text(v *tap.Value, k string) string {
	s, _ := v.Get(k).Text()
	return s
}

// ---- rules over the shared walk -------------------------------------------

// shapeRule reports one check's problems from the shared shape walk of a
// frame (see frameProblems).
func shapeRule(ri tap.RuleInfo) tap.Rule {
	return analysisRule{info: ri, analyses: []*tap.Analysis{shapeAnalysis}}
}

// shapeAnalysis walks each frame once with every shape rule's validators
// and finds the problems of all their checks.
var shapeAnalysis = problemAnalysis("shape", []vocab.CheckID{vocab.Cap1, vocab.Cap2, vocab.Edit1, vocab.Edit2, vocab.Eff1, vocab.Evt1}, nil, walkFrame)

// frameProblems returns the shape walk's problems for the frame being
// checked, of every check; an analysis reading it requires shapeAnalysis.
func frameProblems(c *tap.Conversation, f *tap.Frame) []problem {
	return problemsOf(c, shapeAnalysis)
}

// walkFrame runs the shape validators that apply to f.
func walkFrame(c *tap.Conversation, f *tap.Frame) []problem {
	if f.Truncated || f.Tree == nil {
		return nil
	}
	switch m := f.Msg.(type) {
	case *tap.Request, *tap.Notification:
		// A request or notification of the wrong kind (an observe with an
		// id) is BASE-1's; its event is still checked here.
		params := f.Params()
		if !params.Is(tap.Object) {
			return nil // BASE-1
		}
		switch f.Method() {
		case methodIntercept:
			ps := eventProblems(params.Get("event"), "/params/event", true)
			ps = append(ps, interceptParamsProblems(params, "/params")...)
			return append(ps, interceptCapabilityProblems(params, "/params")...)
		case methodObserve:
			return eventProblems(params.Get("event"), "/params/event", false)
		case methodCapabilities:
			return capabilitiesRequestProblems(params, "/params")
		}
	case *tap.Response:
		if !m.Result.Is(tap.Object) || m.Error != nil {
			return nil
		}
		var method string
		switch x := c.Exchange(); {
		case x != nil:
			method = x.Method
		case m.Result.Has("manifest") && !m.Result.Has("effects"):
			// No request known (a standalone file, or a response CORR-2
			// reports): judge the result by its shape.
			method = methodCapabilities
		default:
			method = methodIntercept
		}
		switch method {
		case methodIntercept:
			return interceptResultProblems(m.Result)
		case methodCapabilities:
			return capabilitiesResultProblems(m.Result, "/result")
		}
	}
	return nil
}

// ---- formats --------------------------------------------------------------

// isAbsoluteURI reports whether s is a URI by RFC 3986's grammar (§3,
// "URI" with a scheme), not by a character set: scheme ":" hier-part
// ["?" query] ["#" fragment]; an authority's host is a valid IPv6 literal
// (or IPvFuture), IPv4 address or reg-name and its port digits; every "%"
// starts a valid escape; "#" appears once, "[" and "]" only around an IP
// literal. RFC 6874 zone identifiers are not RFC 3986 and are refused.
func isAbsoluteURI(s string) bool {
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	i := 1
	for i < len(s) && (isAlpha(s[i]) || isDigit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.') {
		i++
	}
	if i == len(s) || s[i] != ':' {
		return false
	}
	rest := s[i+1:]
	if f := strings.IndexByte(rest, '#'); f >= 0 {
		if !uriChars(rest[f+1:], "/?") { // fragment: no second "#"
			return false
		}
		rest = rest[:f]
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		if !uriChars(rest[q+1:], "/?") {
			return false
		}
		rest = rest[:q]
	}
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		if !isAuthority(rest[:end]) {
			return false
		}
		rest = rest[end:]
	}
	return uriChars(rest, "/") // path: segments of pchar
}

// uriChars reports whether s holds only pchar (unreserved, pct-encoded,
// sub-delims, ":" and "@") and the bytes of extra.
func uriChars(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case pchar[b]:
		case b == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		case strings.IndexByte(extra, b) >= 0:
		default:
			return false
		}
	}
	return true
}

// pchar marks the bytes uriChars passes in every part: unreserved,
// sub-delims, ":" and "@" (a table: the event source of every frame is
// checked byte by byte).
var pchar = func() (t [256]bool) {
	for b := range 256 {
		t[b] = isUnreserved(byte(b)) || isSubDelim(byte(b)) || b == ':' || b == '@'
	}
	return t
}()

func isUnreserved(b byte) bool {
	return isAlpha(b) || isDigit(b) || b == '-' || b == '.' || b == '_' || b == '~'
}

func isSubDelim(b byte) bool { return strings.IndexByte("!$&'()*+,;=", b) >= 0 }

// isAuthority checks RFC 3986 §3.2: [userinfo "@"] host [":" port].
func isAuthority(a string) bool {
	if at := strings.LastIndexByte(a, '@'); at >= 0 {
		if !uriChars(a[:at], "") || strings.IndexByte(a[:at], '@') >= 0 {
			return false
		}
		a = a[at+1:]
	}
	host, port := a, ""
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 || !isIPLiteral(a[1:end]) {
			return false
		}
		host, port = a[:end+1], a[end+1:]
		if port != "" && port[0] != ':' {
			return false
		}
	} else if c := strings.LastIndexByte(a, ':'); c >= 0 {
		host, port = a[:c], a[c:]
	}
	if port != "" {
		for i := 1; i < len(port); i++ {
			if !isDigit(port[i]) {
				return false
			}
		}
	}
	if strings.HasPrefix(host, "[") {
		return true
	}
	// reg-name (an IPv4 address is one too): unreserved, escapes, sub-delims.
	return uriChars(host, "") && strings.IndexByte(host, ':') < 0 && strings.IndexByte(host, '@') < 0
}

// isIPLiteral checks the inside of "[...]": an IPv6 address (RFC 3986
// §3.2.2, no zone) or an IPvFuture "v" 1*HEXDIG "." 1*(unreserved /
// sub-delims / ":").
func isIPLiteral(s string) bool {
	if len(s) > 0 && (s[0] == 'v' || s[0] == 'V') {
		dot := strings.IndexByte(s, '.')
		if dot < 2 || dot == len(s)-1 {
			return false
		}
		for i := 1; i < dot; i++ {
			if !isHex(s[i]) {
				return false
			}
		}
		for i := dot + 1; i < len(s); i++ {
			if b := s[i]; !isUnreserved(b) && !isSubDelim(b) && b != ':' {
				return false
			}
		}
		return true
	}
	if strings.IndexByte(s, '%') >= 0 {
		return false // a zone identifier (RFC 6874) is not RFC 3986
	}
	ip, err := netip.ParseAddr(s)
	return err == nil && ip.Is6()
}

// isRFC3339 reports whether s is an RFC 3339 date-time:
// YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM), with valid ranges (a leap second
// allowed at the end of a UTC month, see below). Compact forms and white
// space are not RFC 3339.
func isRFC3339(s string) bool {
	if len(s) < 20 {
		return false
	}
	num := func(from, n int) (int, bool) {
		v := 0
		for i := from; i < from+n; i++ {
			if !isDigit(s[i]) {
				return 0, false
			}
			v = v*10 + int(s[i]-'0')
		}
		return v, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 2)
	day, ok3 := num(8, 2)
	hour, ok4 := num(11, 2)
	min, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':' {
		return false
	}
	if t := s[10]; t != 'T' && t != 't' {
		return false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || min > 59 || sec > 60 {
		return false
	}
	i := 19
	if s[i] == '.' {
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	if i >= len(s) {
		return false
	}
	offset := 0 // minutes east of UTC
	switch s[i] {
	case 'Z', 'z':
		if i+1 != len(s) {
			return false
		}
	case '+', '-':
		if len(s)-i != 6 || s[i+3] != ':' {
			return false
		}
		oh, ok1 := num(i+1, 2)
		om, ok2 := num(i+4, 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return false
		}
		offset = oh*60 + om
		if s[i] == '-' {
			offset = -offset
		}
	default:
		return false
	}
	if sec < 60 {
		return true
	}
	// A leap second is 23:59:60 UTC on the last day of a month: RFC 3339
	// §5.7 allows :60 only where a leap second can occur, and ITU-R TF.460
	// inserts them at the end of a month (June and December first, the
	// other month ends next), as the upstream checker accepts. The local
	// time is taken back to UTC first; the UTC day may be the one before or
	// after the local date.
	utc := hour*60 + min - offset
	if utc != 23*60+59 && utc != 23*60+59-1440 && utc != 23*60+59+1440 {
		return false
	}
	switch {
	case utc < 0: // the UTC day is the day before the local date
		day--
		if day == 0 {
			if month--; month == 0 {
				month, year = 12, year-1
			}
			day = daysIn(month, year)
		}
	case utc >= 1440: // the day after
		day++
		if day > daysIn(month, year) {
			day = 1
			if month++; month == 13 {
				month, year = 1, year+1
			}
		}
	}
	return day == daysIn(month, year)
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func isAlpha(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
func isDigit(b byte) bool { return b >= '0' && b <= '9' }
func isHex(b byte) bool   { return isDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }
