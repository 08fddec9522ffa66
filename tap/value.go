package tap

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
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
//
// The fields are ordered for size: pointers first (the garbage collector
// scans a node up to its last pointer), Kind and Bool together at the end
// (88 bytes a node, not 96).
type Value struct {
	// Str is the decoded text of a String, or the exact literal of a Number.
	Str string
	// Arr holds the elements of an Array.
	Arr []*Value
	// Obj holds the members of an Object in wire order.
	Obj []Member
	// Start and End delimit the node's bytes in the document it came from.
	Start, End int
	Kind       Kind
	// Bool is the value of a Bool.
	Bool bool
	// plain marks a String the decoder read with no escape (its Str is
	// the document's text between the quotes, so it holds no quote,
	// backslash or control character): its canonical form is Str quoted,
	// with nothing to scan. Values built elsewhere are scanned.
	plain bool
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
	return bytes.Clone(cw.b)
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
	return sha256.Sum256(cw.b)
}

// A canonWriter renders canonical forms. Its buffers are reused through
// canonPool: BASE-6 digests every event, so this is on the audit hot path
// (hence appends to a plain slice: a bytes.Buffer's WriteByte per
// punctuation mark was a call each).
type canonWriter struct {
	b []byte
	// sorted remembers the key order of the first objects of the last
	// value written that needed sorting; objects counts those of the
	// value being written (sort).
	sorted  [maxSortedObjects]sortedObject
	objects int
	// order is a stack of the member indices of the objects being
	// written, each object's sorted by key; each object uses the tail it
	// appended and truncates it when done. Indices rather than Members:
	// moving them while sorting costs no write barrier, and nothing needs
	// clearing after.
	order []int32
}

var canonPool = sync.Pool{New: func() any { return new(canonWriter) }}

// maxPooledCanon is the largest buffer a canonWriter keeps for the next
// value: a huge event's goes to the garbage collector.
const maxPooledCanon = 64 << 10

func (cw *canonWriter) reset() {
	if cap(cw.b) > maxPooledCanon {
		cw.b = nil
	}
	cw.b = cw.b[:0]
	cw.order = cw.order[:0]
	cw.objects = 0
}

// sort sorts ord, the indices of ms, by key as sortMembers does, taking
// the order from the last value written when its object in the same
// place had the same keys in the same order (a harness sends its events'
// members in one order): comparing the keys with those remembered costs
// a fraction of sorting them.
func (cw *canonWriter) sort(ms []Member, ord []int32) {
	n := cw.objects
	cw.objects++
	if n >= len(cw.sorted) || len(ms) > maxSortedKeys {
		sortMembers(ms, ord)
		return
	}
	so := &cw.sorted[n]
	if len(so.ends) == len(ms) {
		same, start := true, 0
		for i := range ms {
			if ms[i].Key != string(so.keys[start:so.ends[i]]) {
				same = false
				break
			}
			start = int(so.ends[i])
		}
		if same {
			copy(ord, so.ord)
			return
		}
	}
	sortMembers(ms, ord)
	so.keys, so.ends, so.ord = so.keys[:0], so.ends[:0], append(so.ord[:0], ord...)
	for i := range ms {
		so.keys = append(so.keys, ms[i].Key...)
		so.ends = append(so.ends, int32(len(so.keys)))
	}
	if len(so.keys) > maxSortedBytes {
		so.keys, so.ends, so.ord = nil, nil, nil // not worth keeping
	}
}

// A sortedObject is the key order of an object a canonWriter sorted: its
// keys (copied, so no frame's bytes are kept), where each ends, and the
// order sortMembers gave them.
type sortedObject struct {
	keys []byte
	ends []int32
	ord  []int32
}

// The objects of a value whose order a canonWriter remembers (the first
// ones it sorts, in the order it writes them), and the most keys and key
// bytes it keeps of one.
const (
	maxSortedObjects = 8
	maxSortedKeys    = 32
	maxSortedBytes   = 1024
)

func (cw *canonWriter) write(v *Value) {
	if v == nil {
		return
	}
	switch v.Kind {
	case Null:
		cw.b = append(cw.b, "null"...)
	case Bool:
		cw.b = strconv.AppendBool(cw.b, v.Bool)
	case Number:
		cw.b = append(cw.b, v.Str...)
	case String:
		if v.plain {
			cw.b = append(cw.b, '"')
			cw.b = append(cw.b, v.Str...)
			cw.b = append(cw.b, '"')
		} else {
			cw.b = appendJSONString(cw.b, v.Str)
		}
	case Array:
		cw.b = append(cw.b, '[')
		for i, e := range v.Arr {
			if i > 0 {
				cw.b = append(cw.b, ',')
			}
			cw.write(e)
		}
		cw.b = append(cw.b, ']')
	case Object:
		// Members sorted by key; a stable sort keeps duplicates in wire
		// order, and the last one wins. Members already in strictly
		// increasing order (sorted, no duplicates: what a canonical
		// sender and most small objects send) keep their order. Nested
		// objects append after this one's indices; if that reallocates
		// order, ord still holds the old array, unchanged.
		ms := v.Obj
		base := len(cw.order)
		for i := range ms {
			cw.order = append(cw.order, int32(i))
		}
		ord := cw.order[base:]
		if !strictlySorted(ms) {
			cw.sort(ms, ord)
		}
		cw.b = append(cw.b, '{')
		first := true
		for k, i := range ord {
			m := &ms[i]
			if k+1 < len(ord) && ms[ord[k+1]].Key == m.Key {
				continue
			}
			if !first {
				cw.b = append(cw.b, ',')
			}
			first = false
			cw.b = appendJSONString(cw.b, m.Key)
			cw.b = append(cw.b, ':')
			cw.write(m.Val)
		}
		cw.b = append(cw.b, '}')
		cw.order = cw.order[:base]
	}
}

// sortMembers sorts ord, indices of ms, by key, keeping duplicates in
// wire order: by insertion for the few members of most objects (no
// comparison function to call), else slices.SortStableFunc.
//
// The insertion sort compares keys by their first eight bytes as one
// big-endian word (keyPrefix), in order as the keys are, and compares
// the strings themselves only when those agree.
func sortMembers(ms []Member, ord []int32) {
	if len(ord) > 24 {
		slices.SortStableFunc(ord, func(x, y int32) int { return strings.Compare(ms[x].Key, ms[y].Key) })
		return
	}
	var pre [24]uint64
	for i, o := range ord {
		pre[i] = keyPrefix(ms[o].Key)
	}
	for i := 1; i < len(ord); i++ {
		o, p := ord[i], pre[i]
		key := ms[o].Key
		j := i
		for ; j > 0 && (pre[j-1] > p || pre[j-1] == p && ms[ord[j-1]].Key > key); j-- {
			ord[j], pre[j] = ord[j-1], pre[j-1]
		}
		ord[j], pre[j] = o, p
	}
}

// keyPrefix is the first eight bytes of s as a big-endian word, zero
// bytes after a shorter s: a < b for two prefixes means s < t for their
// strings, and equal prefixes leave the order to the rest (a key ending
// where another has a zero byte has the same prefix).
func keyPrefix(s string) uint64 {
	if len(s) >= 8 {
		return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
			uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
	}
	var w uint64
	for i := range len(s) {
		w |= uint64(s[i]) << (56 - 8*uint(i))
	}
	return w
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

// appendJSONString appends s as a JSON string, escaping only what JSON
// requires (quote, backslash, control characters); other bytes, including
// invalid UTF-8, are copied as they are. It is the hot path of event
// digests (BASE-6 looks at every event), hence no strconv.Quote: it steps
// eight bytes at a time to the next byte to escape (specialMask), and
// copies the bytes before it in one go.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start, i := 0, 0
	for {
		if i+8 <= len(s) {
			m := specialMask(uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		} else {
			for i < len(s) && s[i] >= 0x20 && s[i] != '"' && s[i] != '\\' {
				i++
			}
			if i == len(s) {
				break
			}
		}
		// s[i] is a quote, a backslash or a control character.
		c := s[i]
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// highBits are the high bits of the eight bytes of a word.
const highBits = 0x8080808080808080

// specialMask marks the bytes of w (little-endian) that are a control
// character, a quote or a backslash: the high bit of each such byte is set
// in the result. Bytes above the lowest marked one may be marked falsely
// (a borrow), never bytes below it, so its lowest set bit is the first
// special byte; bytes ≥ 0x80 are never marked.
func specialMask(w uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = highBits
	)
	less := (w - ones*0x20) &^ w
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	zero := (q-ones)&^q | (bs-ones)&^bs
	return (less | zero) & highs
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
	// ascii: the document parsed and is all ASCII (so valid UTF-8).
	ascii bool
}

// Parse decodes one JSON value from data, as ParseJSON does, within d's
// bounds. It returns ErrTooManyValues when data holds more than MaxValues
// values.
func (d *Decoder) Parse(data []byte) (*Value, error) {
	return d.parse(data, false)
}

// parseFrozen is Parse for data that is never written again (a Frame's
// Raw): the strings of a small document are slices of data itself rather
// than of a copy of it. A string a rule keeps pins data, as it would pin
// the copy.
func (d *Decoder) parseFrozen(data []byte) (*Value, error) {
	return d.parse(data, true)
}

func (d *Decoder) parse(data []byte, frozen bool) (*Value, error) {
	st := stackPool.Get().(*parseStacks)
	p := parser{parseStacks: st, data: data, budget: d.MaxValues}
	switch {
	case len(data) > sharedSourceMax:
	case frozen && len(data) > 0:
		p.src = unsafe.String(&data[0], len(data))
		p.shared = true
	default:
		p.src = string(data)
		p.shared = true
	}
	if p.budget == 0 {
		p.budget = MaxFrameValues
	}
	p.space()
	root, err := p.value(0)
	if err == nil {
		p.space()
		if p.pos != len(p.data) {
			err = p.fail("unexpected data after the JSON value")
		}
	}
	d.Dups, d.DupCount, d.Values, d.KeyCompares = p.dups, p.dupCount, p.values, p.compares
	d.ascii = err == nil && !p.high
	var v *Value
	if err == nil {
		v = p.build(root)
	}
	st.put()
	if err != nil {
		return nil, err
	}
	return v, nil
}

// The parser reads a document in two steps. It first records each value
// on a tape (parseStacks.nodes, reused from one document to the next):
// pointer-free nodes that name their members and elements by index. Once
// the document has parsed, build makes its Values, Members and element
// slices from the tape in as many allocations as there are kinds of them
// (for a document of up to buildChunk values), each exactly the size the
// document needs: no slab half used, no slice regrown, and nothing at all
// allocated for a document that does not parse.

// A tapeNode is one value on the tape, spanning start to end. An object's
// members are outM[first:first+n] (parseStacks.outM), an array's
// elements outE[first:first+n]. The text of a string or number is
// parser.side[side-1] when side is set, else the document's own bytes
// (nodeText). The tape holds no pointers: the garbage collector neither
// scans it nor traces a write to it.
type tapeNode struct {
	start, end     int
	first, n, side int32
	kind           Kind
	b              bool
}

// A strRef is the text of a string on the tape: parser.side[side-1] when
// side is set, else the document's bytes between the quotes of the
// string spanning start to end.
type strRef struct {
	start, end int
	side       int32
}

// A tapeMember is an object member on the tape: its key, its value's
// node index, and its key's keySum (in what would be padding).
type tapeMember struct {
	key strRef
	val int32
	sum uint32
}

// keySum sums up an object key for finding duplicates: equal keys have
// equal sums, so the parser compares in full only keys whose sums agree.
// It reads the key's length and first eight bytes; the key's text is
// p.data[at:at+len(key)] when the key had no escape, and then that word
// is read in one load.
func (p *parser) keySum(key string, at int, plain bool) uint32 {
	var w uint64
	if n := len(key); plain && at+8 <= len(p.data) {
		w = binary.LittleEndian.Uint64(p.data[at:])
		if n < 8 {
			w &= 1<<(8*uint(n)) - 1
		}
	} else {
		for i := range min(n, 8) {
			w |= uint64(key[i]) << (8 * uint(i))
		}
	}
	return uint32(w) ^ uint32(w>>32)*0x9e3779b1 ^ uint32(len(key))<<27
}

// parseStacks are a parser's tape and working stacks, reused from one
// document to the next.
type parseStacks struct {
	nodes []tapeNode
	// members and elems are stacks of the members and elements of the
	// objects and arrays being parsed; a closed container moves its own
	// to the end of outM or outE.
	members []tapeMember
	elems   []int32
	outM    []tapeMember
	outE    []int32
	path    []pathToken
	chunks  [][]Value
	// side holds the strings that are not a plain slice of the shared
	// source: those with escapes, and every string of a document too
	// large to share (parser.shared).
	side []string
}

var stackPool = sync.Pool{New: func() any { return new(parseStacks) }}

// maxPooledStack is the largest stack (and tape) kept for the next
// document: a hostile document's go to the garbage collector.
const maxPooledStack = 4096

// put returns st to the pool, emptied (a parse that failed midway leaves
// entries on its stacks; the tape holds strings of the document).
func (st *parseStacks) put() {
	if max(cap(st.nodes), cap(st.members), cap(st.elems), cap(st.outM), cap(st.outE), cap(st.path), cap(st.side)) > maxPooledStack {
		return
	}
	clear(st.side)
	st.nodes, st.members, st.elems, st.outM, st.outE, st.path, st.side = st.nodes[:0], st.members[:0], st.elems[:0], st.outM[:0], st.outE[:0], st.path[:0], st.side[:0]
	stackPool.Put(st)
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 10000

type parser struct {
	*parseStacks
	data []byte
	pos  int
	dups []DuplicateKey
	// src is one copy of data as a string, when shared: strings without
	// escapes and number literals are slices of it, so a document costs
	// one string allocation instead of one per string (none when data is
	// frozen: src is data itself).
	src    string
	shared bool
	// high is set once a string holds a byte beyond ASCII. A document
	// that parses has such bytes nowhere else (the grammar outside
	// strings is ASCII), so without it the document is valid UTF-8.
	high bool
	// budget is how many more values may be decoded (negative: no bound).
	budget int
	// values, dupCount and compares count the values decoded, the
	// duplicate keys seen, and the key comparisons made to find them.
	values, dupCount, compares int
}

// buildChunk bounds build's allocations: Values, Members and elements
// are allocated at most buildChunk of each kind at once (an object or
// array with more has its own), so that one node a rule keeps pins at
// most a chunk of its document, not the whole of a large one.
const (
	buildShift = 9
	buildChunk = 1 << buildShift
)

// sharedSourceMax is the largest document whose strings are slices of one
// shared copy (parser.src). A string a rule keeps after its frame is gone
// keeps that copy alive, so the copy is shared only where it is small;
// larger documents copy each string on its own, as before.
const sharedSourceMax = 64 << 10

// A carver cuts exact-size slices (capacity equal to length, so that an
// append elsewhere copies) from chunks of at most buildChunk entries,
// knowing how many entries are still to come (left).
type carver[T any] struct {
	buf  []T
	left int
}

func (c *carver[T]) carve(n int) []T {
	if len(c.buf) < n {
		c.buf = make([]T, max(n, min(c.left, buildChunk)))
	}
	out := c.buf[:n:n]
	c.buf = c.buf[n:]
	c.left -= n
	return out
}

// build makes the Values of the tape and returns node root's.
func (p *parser) build(root int32) *Value {
	nodes := p.nodes
	// one holds the Values of a document of up to buildChunk of them
	// (most frames); chunks those of a larger one.
	var one []Value
	chunks := p.chunks[:0]
	if len(nodes) <= buildChunk {
		one = make([]Value, len(nodes))
	} else {
		for i := 0; i < len(nodes); i += buildChunk {
			chunks = append(chunks, make([]Value, min(len(nodes)-i, buildChunk)))
		}
	}
	at := func(i int32) *Value {
		if one != nil {
			return &one[i]
		}
		return &chunks[i>>buildShift][i&(buildChunk-1)]
	}
	mc := carver[Member]{left: len(p.outM)}
	ec := carver[*Value]{left: len(p.outE)}
	for i := range nodes {
		nd := &nodes[i]
		v := at(int32(i))
		v.Start, v.End, v.Kind, v.Bool = nd.start, nd.end, nd.kind, nd.b
		if nd.kind == String || nd.kind == Number {
			v.Str = p.nodeText(nd)
			v.plain = nd.kind == String && nd.side == 0
		}
		if nd.n == 0 {
			continue
		}
		if nd.kind == Object {
			ms := mc.carve(int(nd.n))
			for k, m := range p.outM[nd.first : nd.first+nd.n] {
				ms[k] = Member{Key: p.text(m.key), Val: at(m.val)}
			}
			v.Obj = ms
		} else {
			es := ec.carve(int(nd.n))
			for k, e := range p.outE[nd.first : nd.first+nd.n] {
				es[k] = at(e)
			}
			v.Arr = es
		}
	}
	v := at(root)
	clear(chunks)
	p.chunks = chunks[:0]
	return v
}

// nodeText is the text of a string or number node.
func (p *parser) nodeText(nd *tapeNode) string {
	switch {
	case nd.side > 0:
		return p.side[nd.side-1]
	case nd.kind == String:
		return p.src[nd.start+1 : nd.end-1]
	}
	return p.src[nd.start:nd.end]
}

// text is the text r refers to.
func (p *parser) text(r strRef) string {
	if r.side > 0 {
		return p.side[r.side-1]
	}
	return p.src[r.start+1 : r.end-1]
}

// keep puts s on the side and returns its reference (strRef.side).
func (p *parser) keep(s string) int32 {
	p.side = append(p.side, s)
	return int32(len(p.side))
}

// node records n on the tape and returns its index.
func (p *parser) node(n tapeNode) int32 {
	p.nodes = append(p.nodes, n)
	return int32(len(p.nodes) - 1)
}

// A pathToken is one step of parser.path: an object key or an array index.
type pathToken struct {
	key   strRef
	index int // array index, when key is not set
	isKey bool
}

// pointer renders p.path as a JSON Pointer.
func (p *parser) pointer() string {
	var b strings.Builder
	for _, t := range p.path {
		b.WriteByte('/')
		if t.isKey {
			b.WriteString(EscapePointer(p.text(t.key)))
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
		// Every white space byte is at most ' ': one comparison passes
		// what follows most tokens of a compact document.
		if c := p.data[p.pos]; c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return
		}
		p.pos++
	}
}

// opens reports whether the value at p.pos is an object or an array.
func (p *parser) opens() bool {
	return p.pos < len(p.data) && (p.data[p.pos] == '{' || p.data[p.pos] == '[')
}

// value parses one value and returns its node index on the tape.
func (p *parser) value(depth int) (int32, error) {
	if depth > maxDepth {
		return 0, p.fail("nesting too deep")
	}
	p.values++
	if p.budget >= 0 && p.values > p.budget || p.values > math.MaxInt32 {
		return 0, ErrTooManyValues
	}
	if p.pos >= len(p.data) {
		return 0, p.fail("unexpected end of JSON input")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		side, err := p.strRef()
		if err != nil {
			return 0, err
		}
		return p.node(tapeNode{kind: String, side: side, start: start, end: p.pos}), nil
	case c == 't':
		return p.literal("true", Bool, true)
	case c == 'f':
		return p.literal("false", Bool, false)
	case c == 'n':
		return p.literal("null", Null, false)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return 0, p.fail(fmt.Sprintf("invalid character %q looking for a value", c))
	}
}

func (p *parser) literal(word string, k Kind, b bool) (int32, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return 0, p.fail("invalid literal")
	}
	start := p.pos
	p.pos += len(word)
	return p.node(tapeNode{kind: k, b: b, start: start, end: p.pos}), nil
}

func (p *parser) number() (int32, error) {
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
		return 0, p.fail("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return 0, p.fail("invalid number: no digits after the decimal point")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return 0, p.fail("invalid number: no digits in the exponent")
		}
	}
	var side int32
	if !p.shared {
		side = p.keep(string(p.data[start:p.pos]))
	}
	return p.node(tapeNode{kind: Number, side: side, start: start, end: p.pos}), nil
}

// strRef parses a string and returns its strRef.side: 0 when its text
// is the shared source between its quotes.
func (p *parser) strRef() (int32, error) {
	if p.shared {
		s, plain, err := p.str()
		if err != nil || plain {
			return 0, err
		}
		return p.keep(s), nil
	}
	s, err := p.known()
	if err != nil {
		return 0, err
	}
	return p.keep(s), nil
}

// str parses a string; plain says it had no escapes, its text the
// document's bytes between the quotes.
func (p *parser) str() (s string, plain bool, err error) {
	// The fast path keeps the position in a local: through p, every step
	// was a store and a load of p.pos, the loop's critical path.
	data, pos := p.data, p.pos+1 // past the opening quote
	start := pos
	// or collects the bytes seen: its high bits say whether any was
	// beyond ASCII (parser.high).
	var or uint64
	// Fast path: no escapes.
	long := true // a long string is still to be tried with plainSpan
	for {
		if pos+8 <= len(data) {
			// Eight bytes at a time while none is a quote, a backslash
			// or a control character; the lowest byte specialMask marks
			// is the first such byte, the one to look at.
			w := binary.LittleEndian.Uint64(data[pos:])
			if m := specialMask(w); m != 0 {
				k := uint(bits.TrailingZeros64(m)) &^ 7 // bits below the byte
				or |= w & (1<<k - 1)
				pos += int(k >> 3)
			} else {
				or |= w
				pos += 8
				if long && pos-start >= 16 {
					// Most of a long command or text: plainSpan finds
					// its end with fewer steps a byte.
					long = false
					if end, high, ok := plainSpan(data[pos:]); ok {
						or |= high
						pos += end
					}
				}
				continue
			}
		} else if pos >= len(data) {
			break
		}
		// data[pos] is the byte specialMask marked, or one of the last
		// seven of the document.
		c := data[pos]
		or |= uint64(c)
		if c == '"' {
			if p.shared {
				s = p.src[start:pos]
			} else {
				s = string(data[start:pos])
			}
			p.pos = pos + 1
			p.high = p.high || or&highBits != 0
			return s, true, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.pos = pos
			return "", false, p.fail("control character in string")
		}
		pos++
	}
	p.pos = pos
	var b strings.Builder
	b.Write(p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			p.high = p.high || or&highBits != 0
			return b.String(), false, nil
		case c < 0x20:
			return "", false, p.fail("control character in string")
		case c != '\\':
			or |= uint64(c)
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
				return "", false, p.fail("invalid \\u escape")
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
			return "", false, p.fail(fmt.Sprintf("invalid escape \\%c", e))
		}
	}
	return "", false, p.fail("unterminated string")
}

// plainSpan returns the length of data up to its first quote, when that
// span holds no backslash and no control character (ok false otherwise,
// or without a quote), and the OR of its bytes (whose high bits say
// whether any is beyond ASCII). Two vector searches (the quote, a
// backslash) and a branch-free pass for control characters cost fewer
// steps a byte than specialMask's test of each word; a span that fails is
// scanned again by str, once, so the decode stays linear.
func plainSpan(data []byte) (n int, or uint64, ok bool) {
	const ones = 0x0101010101010101
	q := bytes.IndexByte(data, '"')
	if q < 0 {
		return 0, 0, false
	}
	span := data[:q]
	if bytes.IndexByte(span, '\\') >= 0 {
		return 0, 0, false
	}
	// ctl gets a high bit from a byte below 0x20 (w-0x20 borrows there,
	// and only there: a byte from 0x20 to 0x7f stays below 0x80, one
	// above 0x7f is masked by &^ w).
	var ctl uint64
	i := 0
	for ; i+8 <= len(span); i += 8 {
		w := binary.LittleEndian.Uint64(span[i:])
		or |= w
		ctl |= (w - ones*0x20) &^ w
	}
	for ; i < len(span); i++ {
		c := span[i]
		or |= uint64(c)
		if c < 0x20 {
			return 0, 0, false
		}
	}
	if ctl&highBits != 0 {
		return 0, 0, false
	}
	return q, or, true
}

// known parses a string of a document too large to share one copy of
// (parser.shared): keys and values the protocol itself uses are shared
// strings rather than a new allocation each (the lookup with a converted
// []byte does not allocate); most keys of a frame are among them.
func (p *parser) known() (string, error) {
	start := p.pos + 1
	if end := bytes.IndexByte(p.data[start:], '"'); end >= 0 && end <= 24 {
		raw := p.data[start : start+end]
		if k, ok := knownStrings[string(raw)]; ok {
			p.pos = start + end + 1
			return k, nil
		}
	}
	s, _, err := p.str()
	return s, err
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

func (p *parser) object(depth int) (int32, error) {
	i := p.node(tapeNode{kind: Object, start: p.pos})
	p.pos++
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.nodes[i].end = p.pos
		return i, nil
	}
	var index map[string]struct{} // the keys so far, once there are indexAt of them
	base := len(p.members)
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return 0, p.fail("expected a string object key")
		}
		kstart := p.pos
		side, err := p.strRef()
		if err != nil {
			return 0, err
		}
		kref := strRef{start: kstart, end: p.pos, side: side}
		key := p.text(kref)
		sum := p.keySum(key, kstart+1, side == 0)
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return 0, p.fail("expected ':' after an object key")
		}
		p.pos++
		p.space()
		// The path names the containers being parsed, for the pointer
		// of a duplicate key inside them; a scalar member's own key is
		// added only when it is a duplicate.
		nested := p.opens()
		if nested {
			p.path = append(p.path, pathToken{key: kref, isKey: true})
		}
		val, err := p.value(depth + 1)
		if err != nil {
			return 0, err
		}
		if nested {
			p.path = p.path[:len(p.path)-1]
		}
		dup := false
		if index != nil {
			p.compares++
			_, dup = index[key]
			index[key] = struct{}{}
		} else {
			for j := base; j < len(p.members); j++ {
				p.compares++
				if p.members[j].sum == sum && p.text(p.members[j].key) == key {
					dup = true
					break
				}
			}
			if len(p.members)-base+1 >= indexAt {
				index = make(map[string]struct{}, 2*indexAt)
				for _, m := range p.members[base:] {
					index[p.text(m.key)] = struct{}{}
				}
				index[key] = struct{}{}
			}
		}
		if dup {
			p.dupCount++
			if len(p.dups) < MaxDuplicateKeys {
				p.path = append(p.path, pathToken{key: kref, isKey: true})
				p.dups = append(p.dups, DuplicateKey{Pointer: p.pointer(), Key: key})
				p.path = p.path[:len(p.path)-1]
			}
		}
		p.members = append(p.members, tapeMember{key: kref, val: val, sum: sum})
		p.space()
		if p.pos >= len(p.data) {
			return 0, p.fail("unexpected end of JSON input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			nd := &p.nodes[i]
			nd.end, nd.first, nd.n = p.pos, int32(len(p.outM)), int32(len(p.members)-base)
			p.outM = append(p.outM, p.members[base:]...)
			p.members = p.members[:base]
			return i, nil
		default:
			return 0, p.fail("expected ',' or '}' in an object")
		}
	}
}

func (p *parser) array(depth int) (int32, error) {
	i := p.node(tapeNode{kind: Array, start: p.pos})
	p.pos++
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.nodes[i].end = p.pos
		return i, nil
	}
	base := len(p.elems)
	for {
		p.space()
		nested := p.opens()
		if nested {
			p.path = append(p.path, pathToken{index: len(p.elems) - base})
		}
		val, err := p.value(depth + 1)
		if err != nil {
			return 0, err
		}
		if nested {
			p.path = p.path[:len(p.path)-1]
		}
		p.elems = append(p.elems, val)
		p.space()
		if p.pos >= len(p.data) {
			return 0, p.fail("unexpected end of JSON input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			nd := &p.nodes[i]
			nd.end, nd.first, nd.n = p.pos, int32(len(p.outE)), int32(len(p.elems)-base)
			p.outE = append(p.outE, p.elems[base:]...)
			p.elems = p.elems[:base]
			return i, nil
		default:
			return 0, p.fail("expected ',' or ']' in an array")
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
// It allocates the pointer once (rules build one per effect of every
// response): the builder is sized for string and int tokens first.
func Ptr(base string, toks ...any) string {
	var digits [20]byte
	n := len(base)
	for _, t := range toks {
		switch t := t.(type) {
		case string:
			n += 1 + len(t) + strings.Count(t, "~") + strings.Count(t, "/")
		case int:
			n += 1 + len(strconv.AppendInt(digits[:0], int64(t), 10))
		}
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(base)
	for _, t := range toks {
		b.WriteByte('/')
		switch t := t.(type) {
		case string:
			b.WriteString(EscapePointer(t))
		case int:
			b.Write(strconv.AppendInt(digits[:0], int64(t), 10))
		default:
			b.WriteString(fmt.Sprint(t))
		}
	}
	return b.String()
}
