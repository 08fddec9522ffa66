package tap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The JSON types.
const (
	Null Kind = iota + 1
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"", "null", "boolean", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// A Value is one node of a decoded JSON document. It keeps what an auditor
// needs and a generic decoder loses: object members in wire order (with
// duplicates reported, not merged), number literals exactly as written (so
// 1 and 1.0 stay different facts), and the byte span of the node in the frame.
//
// A nil *Value means "absent"; a Value of Kind Null is an explicit null.
type Value struct {
	Kind Kind
	// Str is the decoded text of a String, or the exact literal of a Number.
	Str string
	// Bool is the value of a Bool.
	Bool bool
	// Arr holds the elements of an Array.
	Arr []*Value
	// Obj holds the members of an Object in wire order.
	Obj []Member
	// Start and End delimit the node's bytes in the document it came from.
	Start, End int
}

// A Member is one key/value pair of an Object.
type Member struct {
	Key string
	Val *Value
}

// Get returns the member named key, or nil when v is not an object or has no
// such member. With duplicate keys (a BASE-1 violation) the last one wins, as
// in most JSON decoders a peer would use.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != Object {
		return nil
	}
	for i := len(v.Obj) - 1; i >= 0; i-- {
		if v.Obj[i].Key == key {
			return v.Obj[i].Val
		}
	}
	return nil
}

// Path follows keys through nested objects; it returns nil when any step is absent.
func (v *Value) Path(keys ...string) *Value {
	for _, k := range keys {
		v = v.Get(k)
	}
	return v
}

// Has reports whether v is an object with a member named key (null included).
func (v *Value) Has(key string) bool { return v.Get(key) != nil }

// Is reports whether v is present and of kind k.
func (v *Value) Is(k Kind) bool { return v != nil && v.Kind == k }

// IsNull reports whether v is an explicit JSON null.
func (v *Value) IsNull() bool { return v != nil && v.Kind == Null }

// Text returns the string value of v, and false when v is not a string.
func (v *Value) Text() (string, bool) {
	if v == nil || v.Kind != String {
		return "", false
	}
	return v.Str, true
}

// Int returns v as an int64 when it is a JSON number with an integer value
// that fits in 64 bits (JSON Schema 2020-12 counts 1.0 and 1e3 as integers).
// The conversion is exact: no literal goes through a float. An integer
// beyond 64 bits is still an integer (IsInteger), which Int cannot return;
// compare it with CompareInt.
func (v *Value) Int() (int64, bool) {
	if v == nil || v.Kind != Number {
		return 0, false
	}
	if n, err := strconv.ParseInt(v.Str, 10, 64); err == nil {
		return n, true
	}
	d, ok := parseDecimal(v.Str)
	if !ok || !d.integer() {
		return 0, false
	}
	if d.zero() {
		return 0, true
	}
	if int64(len(d.digits))+d.exp > 19 {
		return 0, false
	}
	lit := d.digits + strings.Repeat("0", int(d.exp))
	if d.neg {
		lit = "-" + lit
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	return n, err == nil
}

// IsInteger reports whether v is a JSON number with an integer value,
// whatever its size: 2^64, 1e308 and 1.0e400 are integers, as in JSON
// Schema 2020-12 (an integer is any number with a zero fractional part).
func (v *Value) IsInteger() bool {
	if v == nil || v.Kind != Number {
		return false
	}
	d, ok := parseDecimal(v.Str)
	return ok && d.integer()
}

// CompareInt compares the value of number v with n exactly: -1 when v is
// less, 0 when equal, +1 when greater. ok is false when v is not a number.
// It holds for every literal, 2^64, 1e308 and 1e-400 included, so a range
// rule ("≥ 1") never depends on the size of the number.
func (v *Value) CompareInt(n int64) (cmp int, ok bool) {
	if v == nil || v.Kind != Number {
		return 0, false
	}
	d, ok := parseDecimal(v.Str)
	if !ok {
		return 0, false
	}
	if d.integer() {
		if i, fits := v.Int(); fits {
			return cmpInt64(i, n), true
		}
		// Beyond 64 bits: its sign decides.
		if d.neg {
			return -1, true
		}
		return 1, true
	}
	// A fraction lies strictly between two integers: floor(v) and floor(v)+1.
	// Compare n with the integer part (truncated towards zero).
	ip := decimal{neg: d.neg, digits: "", exp: 0}
	if k := int64(len(d.digits)) + d.exp; k > 0 {
		ip.digits = d.digits[:k]
	}
	iv := &Value{Kind: Number, Str: ip.literal()}
	c, _ := iv.CompareInt(n)
	if c != 0 {
		return c, true
	}
	// v = trunc(v) + fraction with trunc(v) == n: v > n when positive.
	if d.neg {
		return -1, true
	}
	return 1, true
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Sign returns -1, 0 or +1 by the sign of number v's value (exact: -0 and
// 0e5 are 0), and 0 when v is not a number.
func (v *Value) Sign() int {
	c, _ := v.CompareInt(0)
	return c
}

// A decimal is a JSON number literal as ±digits × 10^exp, digits without
// leading or trailing zeros ("" for zero).
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

func (d decimal) zero() bool    { return d.digits == "" }
func (d decimal) integer() bool { return d.zero() || d.exp >= 0 }

// literal renders an integer decimal (exp ≥ 0) as a JSON literal.
func (d decimal) literal() string {
	if d.zero() {
		return "0"
	}
	s := d.digits + strings.Repeat("0", int(min(d.exp, 1<<20)))
	if d.neg {
		return "-" + s
	}
	return s
}

// maxDecimalExp bounds exponents: beyond it every non-zero literal is far
// outside any range a rule compares with, and nothing is ever expanded.
const maxDecimalExp = 1 << 40

// parseDecimal splits a JSON number literal (already valid JSON) into a
// decimal. It never allocates digits for the exponent, so a literal such
// as 1e999999999 costs what its text costs.
func parseDecimal(lit string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(lit) && lit[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
		i++
	}
	intPart := lit[start:i]
	frac := ""
	if i < len(lit) && lit[i] == '.' {
		i++
		fs := i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		frac = lit[fs:i]
		if frac == "" {
			return d, false
		}
	}
	if intPart == "" {
		return d, false
	}
	var exp int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			eneg = lit[i] == '-'
			i++
		}
		es := i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			if exp < maxDecimalExp {
				exp = exp*10 + int64(lit[i]-'0')
			}
			i++
		}
		if i == es {
			return d, false
		}
		exp = min(exp, maxDecimalExp)
		if eneg {
			exp = -exp
		}
	}
	if i != len(lit) {
		return d, false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	d.digits, d.exp = trimmed, exp
	if d.zero() {
		d.neg, d.exp = false, 0
	}
	return d, true
}

// Float returns v as a float64 when it is a number.
func (v *Value) Float() (float64, bool) {
	if v == nil || v.Kind != Number {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Str, 64)
	return f, err == nil
}

// Keys returns the member names of an object in wire order.
func (v *Value) Keys() []string {
	if v == nil || v.Kind != Object {
		return nil
	}
	ks := make([]string, len(v.Obj))
	for i, m := range v.Obj {
		ks[i] = m.Key
	}
	return ks
}

// Describe names v's JSON type for messages: "absent", "null", "a string"…
func (v *Value) Describe() string {
	switch {
	case v == nil:
		return "absent"
	case v.Kind == Null:
		return "null"
	case v.Kind == Array || v.Kind == Object:
		return "an " + v.Kind.String()
	default:
		return "a " + v.Kind.String()
	}
}

// Canonical returns a canonical serialization of v: object members sorted by
// key (last duplicate wins), no insignificant space, strings re-escaped,
// numbers kept as written. Two values with the same Canonical form carry the
// same content.
func (v *Value) Canonical() []byte {
	cw := canonPool.Get().(*canonWriter)
	defer canonPool.Put(cw)
	cw.reset()
	cw.write(v)
	return bytes.Clone(cw.b.Bytes())
}

// Digest is the hex SHA-256 of v's canonical form; "" for an absent value.
func (v *Value) Digest() string {
	if v == nil {
		return ""
	}
	s := v.Sum()
	return hex.EncodeToString(s[:])
}

// Sum is the SHA-256 of v's canonical form, the bytes Digest spells in
// hex (the zero array for an absent value). BASE-6 digests every event,
// so a MemoryStore keeps the 32 bytes and never goes through hex.
func (v *Value) Sum() [32]byte {
	if v == nil {
		return [32]byte{}
	}
	cw := canonPool.Get().(*canonWriter)
	defer canonPool.Put(cw)
	cw.reset()
	cw.write(v)
	return sha256.Sum256(cw.b.Bytes())
}

// A canonWriter renders canonical forms. Its buffers are reused through
// canonPool: BASE-6 digests every event, so this is on the audit hot path.
type canonWriter struct {
	b bytes.Buffer
	// scratch is a stack of object members being sorted; each object
	// uses the tail it appended and truncates it when done.
	scratch []Member
}

var canonPool = sync.Pool{New: func() any { return new(canonWriter) }}

func (cw *canonWriter) reset() {
	cw.b.Reset()
	cw.scratch = cw.scratch[:0]
}

func (cw *canonWriter) write(v *Value) {
	if v == nil {
		return
	}
	b := &cw.b
	switch v.Kind {
	case Null:
		b.WriteString("null")
	case Bool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case Number:
		b.WriteString(v.Str)
	case String:
		writeJSONString(b, v.Str)
	case Array:
		b.WriteByte('[')
		for i, e := range v.Arr {
			if i > 0 {
				b.WriteByte(',')
			}
			cw.write(e)
		}
		b.WriteByte(']')
	case Object:
		// Members sorted by key; a stable sort keeps duplicates in wire
		// order, and the last one wins. Members already in strictly
		// increasing order (sorted, no duplicates: what a canonical
		// sender and most small objects send) are written as they are.
		// Otherwise nested objects append after this one's members; if
		// that reallocates scratch, ms still holds the old array,
		// unchanged.
		base := len(cw.scratch)
		ms := v.Obj
		if !strictlySorted(ms) {
			cw.scratch = append(cw.scratch, v.Obj...)
			ms = cw.scratch[base:]
			sortMembers(ms)
		}
		b.WriteByte('{')
		first := true
		for i, m := range ms {
			if i+1 < len(ms) && ms[i+1].Key == m.Key {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			writeJSONString(b, m.Key)
			b.WriteByte(':')
			cw.write(m.Val)
		}
		b.WriteByte('}')
		clear(cw.scratch[base:])
		cw.scratch = cw.scratch[:base]
	}
}

// sortMembers sorts ms by key, keeping duplicates in wire order: by
// insertion for the few members of most objects (no comparison function
// to call), else slices.SortStableFunc.
func sortMembers(ms []Member) {
	if len(ms) > 24 {
		slices.SortStableFunc(ms, func(x, y Member) int { return strings.Compare(x.Key, y.Key) })
		return
	}
	for i := 1; i < len(ms); i++ {
		m := ms[i]
		j := i
		for ; j > 0 && ms[j-1].Key > m.Key; j-- {
			ms[j] = ms[j-1]
		}
		ms[j] = m
	}
}

// strictlySorted reports whether the keys of ms increase strictly.
func strictlySorted(ms []Member) bool {
	for i := 1; i < len(ms); i++ {
		if ms[i-1].Key >= ms[i].Key {
			return false
		}
	}
	return true
}

// writeJSONString writes s as a JSON string, escaping only what JSON
// requires (quote, backslash, control characters); other bytes, including
// invalid UTF-8, are copied as they are. It is the hot path of event
// digests (BASE-6 looks at every event), hence no strconv.Quote.
func writeJSONString(b *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		// Eight bytes at a time while none of them needs escaping (the
		// common case: a long command or text without quotes).
		for i+8 <= len(s) && !escapeIn8(s, i) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// escapeIn8 reports whether any of s[i:i+8] is a byte writeJSONString
// escapes: a control character, a quote or a backslash (a word-at-a-time
// test; bytes ≥ 0x80 never match).
func escapeIn8(s string, i int) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	less := (w - ones*0x20) &^ w // high bit set where a byte < 0x20 (or a false hit beside one)
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	zero := (q-ones)&^q | (bs-ones)&^bs
	return (less|zero)&highs != 0
}

// Any converts v to the generic form encoding/json would produce with
// UseNumber (map[string]any, []any, json.Number). It is for handing a value to a JSON Schema validator.
func (v *Value) Any() any {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case Null:
		return nil
	case Bool:
		return v.Bool
	case Number:
		return json.Number(v.Str)
	case String:
		return v.Str
	case Array:
		out := make([]any, len(v.Arr))
		for i, e := range v.Arr {
			out[i] = e.Any()
		}
		return out
	default:
		out := make(map[string]any, len(v.Obj))
		for _, m := range v.Obj {
			out[m.Key] = m.Val.Any()
		}
		return out
	}
}

// A SyntaxError is a JSON syntax error at a byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg) }

// A DuplicateKey records an object member whose name was already used in the
// same object (BASE-1: duplicate object keys are invalid).
type DuplicateKey struct {
	Pointer string
	Key     string
}

// ParseJSON decodes one JSON value from data, which must hold nothing else
// but white space. It reports duplicate keys rather than failing on them:
// the first MaxDuplicateKeys of them (see Decoder for the full count).
// It does not check UTF-8 validity; callers do that on the raw bytes first.
func ParseJSON(data []byte) (*Value, []DuplicateKey, error) {
	d := Decoder{MaxValues: -1}
	v, err := d.Parse(data)
	return v, d.Dups, err
}

// Bounds on the audit work of one document (issue 8 item 6): a hostile
// frame must cost the audit time linear in its size and never stall it.
const (
	// MaxDuplicateKeys is how many duplicate keys a decode records with
	// their JSON Pointers; the rest are only counted. A pointer costs the
	// depth of its key, so recording every duplicate of a deep object is
	// quadratic (100,000 duplicates 3,000 levels down: 16 s and 1.5 GB).
	MaxDuplicateKeys = 100
	// MaxFrameValues is how many JSON values (objects, arrays, strings,
	// numbers, literals) a frame may hold and still be audited. A frame
	// past it is forwarded whole, decoded no further and reported as not
	// audited (TAP-1), so that audit memory and work per frame stay
	// bounded (a Value is about 100 bytes: 1<<20 of them, ~100 MiB).
	MaxFrameValues = 1 << 20
)

// ErrTooManyValues is returned by Decoder.Parse for a document holding more
// than its MaxValues.
var ErrTooManyValues = errors.New("the document holds more JSON values than the audit bound")

// A Decoder parses JSON documents within bounds, and says how much work
// each took. The zero value applies MaxFrameValues.
type Decoder struct {
	// MaxValues bounds the values of a document (0: MaxFrameValues,
	// negative: no bound).
	MaxValues int

	// After Parse: the first MaxDuplicateKeys duplicate keys, how many
	// there were in all, how many values were decoded, and how many key
	// comparisons duplicate detection made (a work counter: it stays
	// linear in the number of members, whatever their keys).
	Dups        []DuplicateKey
	DupCount    int
	Values      int
	KeyCompares int
}

// Parse decodes one JSON value from data, as ParseJSON does, within d's
// bounds. It returns ErrTooManyValues when data holds more than MaxValues
// values.
func (d *Decoder) Parse(data []byte) (*Value, error) {
	st := stackPool.Get().(*parseStacks)
	p := parser{data: data, budget: d.MaxValues, members: st.members, elems: st.elems, path: st.path}
	if len(data) <= sharedSourceMax {
		p.src = string(data)
		p.shared = true
	}
	if p.budget == 0 {
		p.budget = MaxFrameValues
	}
	p.space()
	v, err := p.value(0)
	if err == nil {
		p.space()
		if p.pos != len(p.data) {
			err = p.fail("unexpected data after the JSON value")
		}
	}
	d.Dups, d.DupCount, d.Values, d.KeyCompares = p.dups, p.dupCount, p.values, p.compares
	st.put(&p)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// parseStacks are a parser's working stacks, reused from one document to
// the next (they grow to the document's width and depth, not its size).
type parseStacks struct {
	members []Member
	elems   []*Value
	path    []pathToken
}

var stackPool = sync.Pool{New: func() any { return new(parseStacks) }}

// maxPooledStack is the largest stack kept for the next document: a
// hostile document's stacks go to the garbage collector.
const maxPooledStack = 4096

// put returns p's stacks to the pool, emptied (a parse that failed midway
// leaves entries on them).
func (st *parseStacks) put(p *parser) {
	if cap(p.members) > maxPooledStack || cap(p.elems) > maxPooledStack || cap(p.path) > maxPooledStack {
		return
	}
	clear(p.members)
	clear(p.elems)
	clear(p.path)
	st.members, st.elems, st.path = p.members[:0], p.elems[:0], p.path[:0]
	stackPool.Put(st)
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 10000

type parser struct {
	data []byte
	pos  int
	dups []DuplicateKey
	// path holds the reference tokens of the value being parsed. Pointers
	// are built from it only for a duplicate key, so that deep or wide
	// documents cost no string building.
	path []pathToken
	// slab hands out Values: one allocation per slabSize nodes instead of
	// one per node (the decoder's hottest allocation).
	slab []Value
	// src is one copy of data as a string, when shared: strings without
	// escapes and number literals are slices of it, so a document costs
	// one string allocation instead of one per string.
	src    string
	shared bool
	// members and elems are stacks of the members and elements of the
	// objects and arrays being parsed; a finished container takes its
	// exact-size slice from mslab or eslab (one allocation per many
	// containers, and none from append's regrowth), slabs of msize and
	// esize entries.
	members []Member
	elems   []*Value
	mslab   []Member
	eslab   []*Value
	msize   int
	esize   int
	// budget is how many more values may be decoded (negative: no bound).
	budget int
	// values, dupCount and compares count the values decoded, the
	// duplicate keys seen, and the key comparisons made to find them.
	values, dupCount, compares int
}

// slabSize is how many Values the parser allocates at once; the first
// slab of a document is smaller when the document is short (node).
const slabSize = 32

// firstSlab and maxSlab bound the slabs members and elements are taken
// from: the first is small (a response holds a handful of members), each
// next one twice the last, up to maxSlab.
const (
	firstSlab = 16
	maxSlab   = 256
)

// sharedSourceMax is the largest document whose strings are slices of one
// shared copy (parser.src). A string a rule keeps after its frame is gone
// keeps that copy alive, so the copy is shared only where it is small;
// larger documents copy each string on its own, as before.
const sharedSourceMax = 64 << 10

// take moves the entries above base on stack into an exact-size slice cut
// from *slab (its capacity is its length, so an append elsewhere copies
// it), and truncates the stack to base.
// *size is the size of the last slab made (0: none yet).
func take[T any](stack *[]T, slab *[]T, size *int, base int) []T {
	n := len(*stack) - base
	var out []T
	if n > maxSlab/2 {
		out = make([]T, n)
	} else {
		if len(*slab) < n {
			*size = min(max(2**size, firstSlab), maxSlab)
			*slab = make([]T, max(*size, n))
		}
		out = (*slab)[:n:n]
		*slab = (*slab)[n:]
	}
	copy(out, (*stack)[base:])
	clear((*stack)[base:])
	*stack = (*stack)[:base]
	return out
}

// node returns a fresh Value from the slab.
func (p *parser) node(v Value) *Value {
	if len(p.slab) == 0 {
		n := slabSize
		if p.values <= 1 {
			// The first slab: sized for a small document's values (about
			// one per 12 bytes of a short AHP message), so that a short answer does
			// not zero and scan a slab it barely uses.
			n = min(max(len(p.data)/12, 8), slabSize)
		}
		p.slab = make([]Value, n)
	}
	n := &p.slab[0]
	p.slab = p.slab[1:]
	*n = v
	return n
}

// A pathToken is one step of parser.path: an object key or an array index.
type pathToken struct {
	key   string
	index int // array index, when key is not set
	isKey bool
}

// pointer renders p.path as a JSON Pointer.
func (p *parser) pointer() string {
	var b strings.Builder
	for _, t := range p.path {
		b.WriteByte('/')
		if t.isKey {
			b.WriteString(EscapePointer(t.key))
		} else {
			b.WriteString(strconv.Itoa(t.index))
		}
	}
	return b.String()
}

// indexAt is the member count from which an object's keys are looked up in
// a map rather than by a scan: a scan per member is quadratic, and a hostile
// object with 100,000 members must not stall the audit.
const indexAt = 16

func (p *parser) fail(msg string) error { return &SyntaxError{Offset: p.pos, Msg: msg} }

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (*Value, error) {
	if depth > maxDepth {
		return nil, p.fail("nesting too deep")
	}
	p.values++
	if p.budget >= 0 && p.values > p.budget {
		return nil, ErrTooManyValues
	}
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of JSON input")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.known()
		if err != nil {
			return nil, err
		}
		return p.node(Value{Kind: String, Str: s, Start: start, End: p.pos}), nil
	case c == 't':
		return p.literal("true", p.node(Value{Kind: Bool, Bool: true}))
	case c == 'f':
		return p.literal("false", p.node(Value{Kind: Bool}))
	case c == 'n':
		return p.literal("null", p.node(Value{Kind: Null}))
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.fail(fmt.Sprintf("invalid character %q looking for a value", c))
	}
}

func (p *parser) literal(word string, v *Value) (*Value, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return nil, p.fail("invalid literal")
	}
	v.Start = p.pos
	p.pos += len(word)
	v.End = p.pos
	return v, nil
}

func (p *parser) number() (*Value, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.fail("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.fail("invalid number: no digits after the decimal point")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.fail("invalid number: no digits in the exponent")
		}
	}
	return p.node(Value{Kind: Number, Str: p.text(start, p.pos), Start: start, End: p.pos}), nil
}

// text returns data[start:end] as a string: a slice of the shared copy,
// or a copy of its own.
func (p *parser) text(start, end int) string {
	if p.shared {
		return p.src[start:end]
	}
	return string(p.data[start:end])
}

func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.text(start, p.pos)
			p.pos++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.fail("control character in string")
		}
		p.pos++
	}
	var b strings.Builder
	b.Write(p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.fail("control character in string")
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		p.pos++
		if p.pos >= len(p.data) {
			break
		}
		e := p.data[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.fail("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
					save := p.pos
					p.pos += 2
					r2, ok := p.hex4()
					if ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							b.WriteRune(d)
							continue
						}
					}
					p.pos = save
				}
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			return "", p.fail(fmt.Sprintf("invalid escape \\%c", e))
		}
	}
	return "", p.fail("unterminated string")
}

// known parses a string. In a document too large to share one copy of
// (parser.shared), keys and values the protocol itself uses are shared
// strings rather than a new allocation each (the lookup with a converted
// []byte does not allocate); most keys of a frame are among them.
func (p *parser) known() (string, error) {
	if p.shared {
		return p.str() // a slice of the shared copy: no allocation to save
	}
	start := p.pos + 1
	if end := bytes.IndexByte(p.data[start:], '"'); end >= 0 && end <= 24 {
		raw := p.data[start : start+end]
		if k, ok := knownStrings[string(raw)]; ok {
			p.pos = start + end + 1
			return k, nil
		}
	}
	return p.str()
}

// knownStrings are object keys and values common in AHP frames.
var knownStrings = func() map[string]string {
	m := make(map[string]string)
	for _, k := range strings.Fields(`jsonrpc id method params result error code message data protocolVersion
		event capabilities effects type source time harness name version session cwd workspaceRoots tool kind
		input origin call path extensions reason operation target value items parts role text mediaType selection
		body ref sha256 size synthesized deliverAt modify flow inject manifest turn task model request response
		output status mode action content native parentEventId outcome execution attempt usage batch messages
		2.0 draft hooks/intercept hooks/observe hooks/capabilities tool.before tool.after session.start
		session.end deny allow stop continue append replace merge user assistant system developer
		metadata omit gap text/plain native mcp shell file_write file_read intercept observe`) {
		m[k] = k
	}
	return m
}()

func (p *parser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(n), true
}

func (p *parser) object(depth int) (*Value, error) {
	v := p.node(Value{Kind: Object, Start: p.pos})
	p.pos++
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		v.End = p.pos
		return v, nil
	}
	var index map[string]struct{} // the keys so far, once there are indexAt of them
	base := len(p.members)
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("expected a string object key")
		}
		key, err := p.known()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("expected ':' after an object key")
		}
		p.pos++
		p.space()
		p.path = append(p.path, pathToken{key: key, isKey: true})
		val, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		dup := false
		if index != nil {
			p.compares++
			_, dup = index[key]
			index[key] = struct{}{}
		} else {
			for _, m := range p.members[base:] {
				p.compares++
				if m.Key == key {
					dup = true
					break
				}
			}
			if len(p.members)-base+1 >= indexAt {
				index = make(map[string]struct{}, 2*indexAt)
				for _, m := range p.members[base:] {
					index[m.Key] = struct{}{}
				}
				index[key] = struct{}{}
			}
		}
		if dup {
			p.dupCount++
			if len(p.dups) < MaxDuplicateKeys {
				p.dups = append(p.dups, DuplicateKey{Pointer: p.pointer(), Key: key})
			}
		}
		p.path = p.path[:len(p.path)-1]
		p.members = append(p.members, Member{Key: key, Val: val})
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of JSON input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			v.End = p.pos
			v.Obj = take(&p.members, &p.mslab, &p.msize, base)
			return v, nil
		default:
			return nil, p.fail("expected ',' or '}' in an object")
		}
	}
}

func (p *parser) array(depth int) (*Value, error) {
	v := p.node(Value{Kind: Array, Start: p.pos})
	p.pos++
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		v.End = p.pos
		return v, nil
	}
	base := len(p.elems)
	for {
		p.space()
		p.path = append(p.path, pathToken{index: len(p.elems) - base})
		val, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		p.elems = append(p.elems, val)
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of JSON input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			v.End = p.pos
			v.Arr = take(&p.elems, &p.eslab, &p.esize, base)
			return v, nil
		default:
			return nil, p.fail("expected ',' or ']' in an array")
		}
	}
}

// EscapePointer escapes one JSON Pointer reference token (RFC 6901).
func EscapePointer(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

// Ptr joins JSON Pointer tokens onto base: Ptr("/params", "event", 0).
func Ptr(base string, toks ...any) string {
	var b strings.Builder
	b.WriteString(base)
	for _, t := range toks {
		b.WriteByte('/')
		switch t := t.(type) {
		case string:
			b.WriteString(EscapePointer(t))
		case int:
			b.WriteString(strconv.Itoa(t))
		default:
			fmt.Fprint(&b, t)
		}
	}
	return b.String()
}
