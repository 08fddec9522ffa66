package httpaudit

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/ahp-tap/ahp-tap/tap"
)

// MinCredentialLen is the shortest credential ahp-tap looks for in bodies.
// A shorter one would match ordinary text; it is still redacted from the
// headers that carry it.
const MinCredentialLen = 8

// DefaultMaxCredentials bounds how many distinct credentials a tap
// remembers (as keyed hashes, about 100 bytes each). Past it the oldest is
// Forgotten, and the first time that happens the audit reports it (TAP-1).
const DefaultMaxCredentials = 100_000

// DefaultRedactHeaders are the request and response headers whose values
// are redacted from captures and logs by default, besides Authorization
// (always redacted). --no-redact records them as they are.
var DefaultRedactHeaders = []string{"Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key"}

// DefaultRedactParams are the URL query parameters whose values are
// redacted from captures and logs by default (names compared without
// regard to case). --no-redact records them as they are.
var DefaultRedactParams = []string{
	"access_token", "id_token", "refresh_token", "token", "auth", "authorization",
	"api_key", "apikey", "api-key", "key", "client_secret", "secret", "password", "passwd", "pwd",
	"sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token", "code",
}

// Redaction says what is redacted besides the Authorization credential.
type Redaction struct {
	// Headers names more headers whose values are secrets
	// (--redact-header): redacted in captures and logs, and remembered
	// and searched for in bodies like a bearer token.
	Headers []string
	// NoDefaults turns off DefaultRedactHeaders and DefaultRedactParams
	// (--no-redact). The Authorization credential is redacted regardless.
	NoDefaults bool
}

// Credentials remembers every credential the harness has sent (the
// Authorization and Proxy-Authorization credentials, the values of
// X-Api-Key and --redact-header headers, credential query parameters), so
// that the audit copy of every body, header, URL and diagnostic can be
// searched for them and have them replaced by tap.RedactedCredential
// before anything is checked, logged or captured (AHP-AUTH-001). They are
// kept as keyed hashes, never in clear, and never written anywhere.
//
// A body is searched as it is and decoded: a credential written with JSON
// escapes ("\/", "\u0041") or percent escapes ("%2F"), up to three levels
// deep (JSON inside a JSON string), is found and replaced too.
//
// The zero value redacts the defaults; configure sets it up otherwise
// before first use. Methods are safe for concurrent use.
type Credentials struct {
	max     int             // how many credentials to keep (0: DefaultMaxCredentials)
	headers map[string]bool // lower-case names of redacted headers besides Authorization; nil: the defaults
	params  map[string]bool // lower-case names of redacted query parameters; nil: the defaults
	learn   map[string]bool // lower-case names of headers whose values are remembered as credentials
	// Forgotten is called once, off the caller's locks, when the first
	// credential is Forgotten to keep within max.
	Forgotten func(max int)

	once sync.Once    // runs setup
	seed uint64       // keys the anchor hash
	key  maphash.Seed // keys the credential digests

	// filter has a bit set for the anchor hash of every credential ever
	// learned: a clear bit means no credential starts at that position,
	// which spares the lock and the map for almost every byte scanned.
	filter [filterWords]atomic.Uint64
	// firsts holds the distinct first bytes of the credentials ever
	// learned while there are at most maxSkipFirsts of them (firstsMany
	// past that): the search jumps from one such byte to the next instead
	// of hashing at every byte (scan). Written under mu.
	firsts atomic.Uint64
	count  atomic.Int64  // credentials remembered now
	learnt atomic.Uint64 // credentials remembered so far, forgotten ones included (Learnt)

	mu     sync.RWMutex           // guards anchor, order, next, warned
	anchor map[uint64]*credBucket // credentials by the hash of their first 8 bytes
	order  []credRef              // credentials in the order learned: a ring once full
	next   int                    // where the next credential goes in order once full
	warned bool                   // Forgotten has been called
}

// A credKey is one remembered credential: its length and keyed digest.
type credKey struct {
	n   int
	sum uint64
}

// A credBucket holds the credentials whose first 8 bytes hash alike. Many
// share their first bytes (every JWT starts "eyJhbGci"), so a bucket is
// searched by length, then by digest: never one by one.
type credBucket struct {
	lens []int                // the distinct lengths in keys, for the search
	keys map[credKey]struct{} // the credentials
}

// A credRef names a credential in credentials.order, for forgetting it.
type credRef struct {
	anchor uint64
	key    credKey
}

const (
	filterBits  = 20
	filterWords = 1 << filterBits / 64
)

// The packing of Credentials.firsts: the number of distinct first bytes in
// its low byte (firstsMany: more than maxSkipFirsts), the bytes above it.
const (
	maxSkipFirsts = 4
	firstsMany    = 0xff
)

// Configure sets what is redacted and how many credentials are kept. It
// must run before the first use.
func (c *Credentials) Configure(r Redaction, max int) {
	c.max = max
	c.headers, c.params, c.learn = map[string]bool{}, map[string]bool{}, map[string]bool{"authorization": true}
	if !r.NoDefaults {
		for _, h := range DefaultRedactHeaders {
			c.headers[strings.ToLower(h)] = true
		}
		for _, p := range DefaultRedactParams {
			c.params[p] = true
		}
		c.learn["proxy-authorization"], c.learn["x-api-key"] = true, true
	}
	for _, h := range r.Headers {
		c.headers[strings.ToLower(h)] = true
		c.learn[strings.ToLower(h)] = true
	}
}

func (c *Credentials) setup() {
	if c.headers == nil {
		c.Configure(Redaction{}, c.max)
	}
	if c.max <= 0 {
		c.max = DefaultMaxCredentials
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	c.seed = binary.LittleEndian.Uint64(b[:])
	c.key = maphash.MakeSeed()
	c.anchor = make(map[uint64]*credBucket)
}

// Add remembers the credentials in the headers of a request: what follows
// the scheme in Authorization and Proxy-Authorization (after any white
// space, "Bearer\tabc" as "Bearer abc"; the user:password of Basic too), and
// the whole values of X-Api-Key and the --redact-header headers.
func (c *Credentials) Add(h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			c.AddField(k, v)
		}
	}
}

// AddField is Add for one header field (name in any case): the relay
// learns from the field lines it parsed, without building a header.
func (c *Credentials) AddField(name, value string) {
	c.once.Do(c.setup)
	var buf [32]byte
	lk := lowerName(buf[:0], name)
	if !c.learn[string(lk)] {
		return
	}
	if !bytes.Equal(lk, []byte("authorization")) && !bytes.Equal(lk, []byte("proxy-authorization")) {
		c.remember(strings.TrimSpace(value))
		return
	}
	scheme, cred := splitAuthorization(value)
	c.remember(cred)
	if strings.EqualFold(scheme, "basic") {
		if up, err := base64.StdEncoding.DecodeString(cred); err == nil {
			c.remember(string(up))
			if _, pass, ok := strings.Cut(string(up), ":"); ok {
				c.remember(pass)
			}
		}
	}
}

// lowerName appends name in lower case (ASCII: header names are tokens)
// to buf: with a buffer on the caller's stack, a map lookup by the result
// (m[string(b)]) allocates nothing, where strings.ToLower of a canonical
// name allocates every time.
func lowerName(buf []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		b := name[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		buf = append(buf, b)
	}
	return buf
}

// AddURL remembers the values of credential query parameters of u (the
// defaults: DefaultRedactParams), and the password of its userinfo, as
// the user:password of a Basic credential is. Other secret-like
// parameters and the user name are hidden wherever the URL is shown
// (RedactURL), but not searched for in bodies: an ordinary value there
// would make every body holding it an AUTH-1 finding.
func (c *Credentials) AddURL(u *url.URL) {
	c.once.Do(c.setup)
	if u == nil {
		return
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			c.remember(p)
		}
	}
	if u.RawQuery == "" {
		return
	}
	for _, part := range strings.Split(u.RawQuery, "&") {
		name, val, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if !c.params[strings.ToLower(name)] {
			continue
		}
		c.remember(val)
		if dec, err := url.QueryUnescape(val); err == nil && dec != val {
			c.remember(dec)
		}
	}
}

// secretParam says whether the value of the query parameter name is
// redacted: one of the defaults or a secret-like name (SecretName), unless
// --no-redact.
func (c *Credentials) secretParam(name string) bool {
	if len(c.params) == 0 {
		return false
	}
	return secretParamName(name)
}

// splitAuthorization splits an Authorization value into its scheme and
// credential ("Bearer abc" → "Bearer", "abc"), at any white space. A value
// without a scheme is all credential.
func splitAuthorization(v string) (scheme, cred string) {
	v = strings.TrimSpace(v)
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		return v[:i], strings.TrimSpace(v[i+1:])
	}
	return "", v
}

// digest is a credential's keyed 64-bit hash: the seed is random per
// process and never leaves memory.
func (c *Credentials) digest(b []byte) uint64 { return maphash.Bytes(c.key, b) }

// anchorOf hashes 8 bytes read as a little-endian word. Multiplying by an
// odd constant is a bijection: distinct anchors never share a map key.
func (c *Credentials) anchorOf(w uint64) uint64 { return (w ^ c.seed) * 0x9E3779B97F4A7C15 }

func (c *Credentials) filterHas(h uint64) bool {
	i := h >> (64 - filterBits)
	return c.filter[i/64].Load()&(1<<(i%64)) != 0
}

// remember adds one credential.
func (c *Credentials) remember(cred string) {
	if len(cred) < MinCredentialLen {
		return
	}
	c.once.Do(c.setup)
	h := c.anchorOf(binary.LittleEndian.Uint64([]byte(cred[:8])))
	k := credKey{n: len(cred), sum: maphash.String(c.key, cred)} // as digest hashes the same bytes
	c.mu.RLock()
	known := c.anchor[h].has(k)
	c.mu.RUnlock()
	if known {
		return
	}
	c.mu.Lock()
	if c.anchor[h].has(k) {
		c.mu.Unlock()
		return
	}
	warn := false
	if len(c.order) < c.max {
		c.order = append(c.order, credRef{h, k})
		c.count.Add(1)
	} else {
		old := c.order[c.next]
		if bk := c.anchor[old.anchor]; bk != nil {
			delete(bk.keys, old.key)
			if len(bk.keys) == 0 {
				delete(c.anchor, old.anchor)
			}
		}
		c.order[c.next] = credRef{h, k}
		c.next = (c.next + 1) % c.max
		warn, c.warned = !c.warned, true
	}
	bk := c.anchor[h]
	if bk == nil {
		bk = &credBucket{keys: make(map[credKey]struct{}, 1)}
		c.anchor[h] = bk
	}
	if !slices.Contains(bk.lens, k.n) {
		bk.lens = append(bk.lens, k.n)
		slices.SortFunc(bk.lens, func(x, y int) int { return y - x }) // longest first
	}
	bk.keys[k] = struct{}{}
	c.addFirst(cred[0])
	i := h >> (64 - filterBits)
	c.filter[i/64].Or(1 << (i % 64))
	c.learnt.Add(1)
	c.mu.Unlock()
	if warn && c.Forgotten != nil {
		c.Forgotten(c.max)
	}
}

// Learnt counts the credentials learnt so far. A text redacted while
// Learnt was n is redacted the same way while it still is n: a caller
// may keep the result that long instead of redacting the text again.
func (c *Credentials) Learnt() uint64 { return c.learnt.Load() }

func (bk *credBucket) has(k credKey) bool {
	if bk == nil {
		return false
	}
	_, ok := bk.keys[k]
	return ok
}

// A span is a byte range [start, end) holding a credential. quote says the
// marker replacing it goes in quotes (it replaces a whole JSON value).
type span struct {
	start, end int
	quote      bool
}

// addFirst records b as the first byte of a credential, with c.mu held.
func (c *Credentials) addFirst(b byte) {
	f := c.firsts.Load()
	n := int(f & 0xff)
	if n == firstsMany {
		return
	}
	for k := range n {
		if byte(f>>(8*(k+1))) == b {
			return
		}
	}
	if n == maxSkipFirsts {
		c.firsts.Store(firstsMany)
		return
	}
	c.firsts.Store(f&^0xff | uint64(b)<<(8*(n+1)) | uint64(n+1))
}

// scan appends the spans of b that hold a remembered credential, longest
// first where several start at one byte. Its cost is linear in len(b)
// whatever the number of credentials: one hash per byte, and only where
// a credential's first 8 bytes are, one digest per distinct length of the
// credentials starting so. While the credentials start with at most
// maxSkipFirsts distinct bytes, only the positions holding one of them
// are hashed: the others cannot start a credential (issue 27 goal 2: the
// hash at every byte of every body was the audit's largest cost outside
// the engine).
func (c *Credentials) scan(b []byte, out []span) []span {
	if c.count.Load() == 0 {
		return out
	}
	var skip firstSkipper
	skip.init(c.firsts.Load())
	for i := 0; i+MinCredentialLen <= len(b); {
		if skip.n > 0 {
			if i = skip.next(b[:len(b)-MinCredentialLen+1], i); i < 0 {
				break
			}
		}
		h := c.anchorOf(binary.LittleEndian.Uint64(b[i:]))
		if !c.filterHas(h) {
			i++
			continue
		}
		c.mu.RLock()
		n := 0
		if bk := c.anchor[h]; bk != nil {
			for _, l := range bk.lens { // longest first
				if i+l > len(b) {
					continue
				}
				if _, ok := bk.keys[credKey{l, c.digest(b[i : i+l])}]; ok {
					n = l
					break
				}
			}
		}
		c.mu.RUnlock()
		if n == 0 {
			i++
			continue
		}
		out = append(out, span{start: i, end: i + n})
		i += n
	}
	return out
}

// A firstSkipper finds the next position of a text that holds one of a
// few bytes (bytes.IndexByte for each, remembered until passed).
type firstSkipper struct {
	n     int // how many bytes; 0: every position is a candidate
	bytes [maxSkipFirsts]byte
	at    [maxSkipFirsts]int // the next position of bytes[k] found; -1: none left; -2: not searched yet
	near  int                // candidates in a row found close together
	dense int                // below it, every position is a candidate: the bytes are frequent there
}

// init sets the skipper up for the packed first bytes f
// (Credentials.firsts); with none or too many, it skips nothing.
func (s *firstSkipper) init(f uint64) {
	n := int(f & 0xff)
	if n == firstsMany || n == 0 {
		return
	}
	s.n = n
	for k := range n {
		s.bytes[k], s.at[k] = byte(f>>(8*(k+1))), -2
	}
}

// next returns the first position at or after i of b holding one of the
// bytes, or -1. Where they are frequent (four candidates in a row within
// 8 bytes of each other), it returns every position for the next 64
// bytes: a search per byte would cost more than the hash it spares.
func (s *firstSkipper) next(b []byte, i int) int {
	if i < s.dense {
		return i
	}
	best := -1
	for k := range s.n {
		if a := s.at[k]; a != -1 && a < i {
			s.at[k] = -1
			if j := bytes.IndexByte(b[i:], s.bytes[k]); j >= 0 {
				s.at[k] = i + j
			}
		}
		if a := s.at[k]; a >= 0 && (best < 0 || a < best) {
			best = a
		}
	}
	if best < 0 {
		return -1
	}
	if best-i < MinCredentialLen {
		if s.near++; s.near >= 4 {
			s.near, s.dense = 0, best+64
		}
	} else {
		s.near = 0
	}
	return best
}

// maxEscapeDepth is how many layers of escaping are undone when searching
// for credentials: a token in a JSON string (1), in JSON carried inside a
// JSON string (2), and once more.
const maxEscapeDepth = 3

// find returns the merged spans of b that hold a credential, as written or
// once its escapes are decoded.
func (c *Credentials) find(b []byte) []span {
	if c.count.Load() == 0 || len(b) < MinCredentialLen {
		return nil
	}
	return mergeSpans(c.findIn(b, 0, nil))
}

func (c *Credentials) findIn(b []byte, depth int, out []span) []span {
	n := len(out)
	out = c.scan(b, out)
	if depth == 0 {
		// A credential found as written may begin or end inside an
		// escape ("x\nabc…" holds "nabc…"): replacing only its bytes would
		// leave a broken escape and the body no longer JSON.
		for i := n; i < len(out); i++ {
			out[i] = wholeEscapes(b, out[i])
		}
	}
	if depth >= maxEscapeDepth {
		return out
	}
	dec, m, ok := unescape(b)
	if !ok {
		return out
	}
	for _, s := range c.findIn(dec, depth+1, nil) {
		out = append(out, span{start: m.rawStart(s.start), end: m.rawEnd(s.end - 1)})
	}
	return out
}

// wholeEscapes widens s to whole JSON escapes at both ends.
func wholeEscapes(b []byte, s span) span {
	if s.start > 0 && escapeBackslash(b, s.start-1) {
		s.start--
	}
	for i := max(s.start, s.end-6); i < s.end; {
		if !escapeBackslash(b, i) {
			i++
			continue
		}
		n := 2
		if i+1 < len(b) && b[i+1] == 'u' {
			n = 6
		}
		s.end = max(s.end, min(i+n, len(b)))
		i += n
	}
	return s
}

// escapeBackslash reports whether b[i] is a backslash that begins an
// escape: it ends an odd run of backslashes.
func escapeBackslash(b []byte, i int) bool {
	n := 0
	for j := i; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

func mergeSpans(ss []span) []span {
	if len(ss) < 2 {
		return ss
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
	out := ss[:1]
	for _, s := range ss[1:] {
		last := &out[len(out)-1]
		if s.start < last.end {
			last.end = max(last.end, s.end)
			last.quote = last.quote || s.quote
			continue
		}
		out = append(out, s)
	}
	return out
}

// Redact returns b with every remembered credential replaced by
// tap.RedactedCredential, as written or escaped, and how many it replaced.
// b itself is returned, unchanged, when nothing matched; it is never
// modified. A JSON body stays JSON: a credential outside a string (a
// numeric key written as a number, say) takes the whole value it is in
// with it, replaced by the marker as a JSON string.
func (c *Credentials) Redact(b []byte) ([]byte, int) {
	c.once.Do(c.setup)
	spans := c.find(b)
	if len(spans) == 0 {
		return b, 0
	}
	out := replaceSpans(b, spans)
	if !json.Valid(out) && json.Valid(b) {
		var d tap.Decoder // bounded as the audit decode is; past it the body stays redacted, if not JSON
		if v, err := d.Parse(b); err == nil {
			out = replaceSpans(b, valueSpans(v, spans))
		}
	}
	return out, len(spans)
}

func replaceSpans(b []byte, spans []span) []byte {
	out := make([]byte, 0, len(b)+len(spans)*(len(tap.RedactedCredential)+2))
	at := 0
	for _, s := range spans {
		out = append(out, b[at:s.start]...)
		if s.quote {
			out = append(out, '"')
		}
		out = append(out, tap.RedactedCredential...)
		if s.quote {
			out = append(out, '"')
		}
		at = s.end
	}
	return append(out, b[at:]...)
}

// valueSpans widens each span not inside a JSON string to the smallest
// value of v holding it, to be replaced by a quoted marker.
func valueSpans(v *tap.Value, spans []span) []span {
	out := make([]span, 0, len(spans))
	for _, s := range spans {
		n := v
		for {
			var inner *tap.Value
			for _, e := range n.Arr {
				if e.Start <= s.start && s.end <= e.End {
					inner = e
				}
			}
			for _, m := range n.Obj {
				if m.Val.Start <= s.start && s.end <= m.Val.End {
					inner = m.Val
				}
			}
			if inner == nil {
				break
			}
			n = inner
		}
		if n.Kind == tap.String && n.Start < s.start && s.end < n.End {
			out = append(out, s) // inside the quotes: the marker alone keeps it JSON
			continue
		}
		out = append(out, span{start: n.Start, end: n.End, quote: true})
	}
	return mergeSpans(out)
}

// RedactString is redact for text (URLs, error messages, diagnostics).
func (c *Credentials) RedactString(s string) string {
	c.once.Do(c.setup)
	if c.count.Load() == 0 {
		return s
	}
	// Redact never modifies its argument: a read-only view of s spares a
	// copy of every header value and URL searched.
	b, n := c.Redact(unsafe.Slice(unsafe.StringData(s), len(s)))
	if n == 0 {
		return s
	}
	return string(b)
}

// RedactURL renders u for a capture or log: its userinfo hidden, the
// values of credential query parameters replaced, and every remembered
// credential elsewhere replaced.
func (c *Credentials) RedactURL(u *url.URL) string {
	c.once.Do(c.setup)
	if u == nil {
		return ""
	}
	return c.RedactString(renderURL(u, redactQueryWith(u.RawQuery, tap.RedactedCredential, c.secretParam), false))
}

// RedactURLString is redactURL for a URL already rendered as text.
func (c *Credentials) RedactURLString(s string) string {
	if u, err := url.Parse(s); err == nil {
		return c.RedactURL(u)
	}
	return c.RedactString(s)
}

// MetaHeader copies h for a tap.HTTPMeta, redacted as RedactHeader does.
func (c *Credentials) MetaHeader(h http.Header) map[string][]string {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	c.RedactHeader(out)
	return out
}

// RedactHeader redacts h in place for a tap.HTTPMeta: Authorization
// values (and Proxy-Authorization, unless --no-redact) keep only their
// scheme, the values of the other redacted headers are replaced whole,
// and every remembered credential elsewhere is replaced. A header built
// for the audit alone is redacted without a copy.
func (c *Credentials) RedactHeader(h http.Header) {
	c.once.Do(c.setup)
	for k, vs := range h {
		if vs == nil {
			h[k] = []string{} // recorded as an empty list, as every copy did
			continue
		}
		var buf [32]byte
		lk := lowerName(buf[:0], k)
		auth := bytes.Equal(lk, []byte("authorization")) || bytes.Equal(lk, []byte("proxy-authorization")) && c.headers[string(lk)]
		whole := c.headers[string(lk)]
		for i, v := range vs {
			switch {
			case auth:
				scheme, _ := splitAuthorization(v)
				if scheme == "Bearer" {
					vs[i] = bearerRedacted // nearly every request's: no concatenation
					continue
				}
				vs[i] = strings.TrimSpace(scheme + " " + tap.RedactedCredential)
			case whole:
				vs[i] = tap.RedactedCredential
			default:
				vs[i] = c.RedactString(v)
			}
		}
	}
}

// bearerRedacted is a Bearer Authorization value redacted.
const bearerRedacted = "Bearer " + tap.RedactedCredential

// An escapeMap maps offsets of a decoded text back to the text it was
// decoded from. Between escapes the two advance together.
type escapeMap []escapeAt

// An escapeAt is one escape: decLen decoded bytes at dec came from rawLen
// bytes at raw.
type escapeAt struct{ dec, raw, decLen, rawLen int }

// at returns the escape at or before decoded offset d, or nil.
func (m escapeMap) at(d int) *escapeAt {
	i := sort.Search(len(m), func(i int) bool { return m[i].dec > d })
	if i == 0 {
		return nil
	}
	return &m[i-1]
}

// rawStart is where the decoded byte d starts in the raw text.
func (m escapeMap) rawStart(d int) int {
	e := m.at(d)
	switch {
	case e == nil:
		return d
	case d < e.dec+e.decLen:
		return e.raw
	}
	return e.raw + e.rawLen + d - (e.dec + e.decLen)
}

// rawEnd is where the decoded byte d ends in the raw text.
func (m escapeMap) rawEnd(d int) int {
	e := m.at(d)
	switch {
	case e == nil:
		return d + 1
	case d < e.dec+e.decLen:
		return e.raw + e.rawLen
	}
	return e.raw + e.rawLen + d - (e.dec + e.decLen) + 1
}

// unescape decodes the JSON string escapes (\" \\ \/ \b \f \n \r \t
// \uXXXX, surrogate pairs joined) and percent escapes (%XX) of b wherever
// they are, in strings or not: a credential may be written either way. It
// reports false when b holds no escape.
func unescape(b []byte) ([]byte, escapeMap, bool) {
	if bytes.IndexByte(b, '\\') < 0 && bytes.IndexByte(b, '%') < 0 {
		return nil, nil, false
	}
	dec := make([]byte, 0, len(b))
	var m escapeMap
	var tmp [utf8.UTFMax]byte
	for i := 0; i < len(b); {
		j := bytes.IndexAny(b[i:], `\%`)
		if j < 0 {
			dec = append(dec, b[i:]...)
			break
		}
		dec = append(dec, b[i:i+j]...)
		i += j
		out, n := escapeAtStart(b[i:], tmp[:0])
		if n == 0 {
			dec = append(dec, b[i])
			i++
			continue
		}
		m = append(m, escapeAt{dec: len(dec), raw: i, decLen: len(out), rawLen: n})
		dec = append(dec, out...)
		i += n
	}
	if len(m) == 0 {
		return nil, nil, false
	}
	return dec, m, true
}

// escapeAtStart decodes the escape b starts with into out, and says how
// many bytes of b it took (0: b does not start with an escape).
func escapeAtStart(b, out []byte) ([]byte, int) {
	switch {
	case len(b) >= 3 && b[0] == '%' && isHex(b[1]) && isHex(b[2]):
		return append(out, unhex(b[1])<<4|unhex(b[2])), 3
	case len(b) < 2 || b[0] != '\\':
		return out, 0
	}
	switch e := b[1]; e {
	case '"', '\\', '/':
		return append(out, e), 2
	case 'b', 'f', 'n', 'r', 't':
		return append(out, controlEscapes[e]), 2
	case 'u':
		r, ok := hex4(b[2:])
		if !ok {
			return out, 0
		}
		n := 6
		if utf16.IsSurrogate(r) && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if r2, ok := hex4(b[8:]); ok {
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r, n = d, 12
				}
			}
		}
		return utf8.AppendRune(out, r), n
	}
	return out, 0
}

// controlEscapes decodes the one-letter JSON escapes of control characters.
var controlEscapes = [256]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		if !isHex(c) {
			return 0, false
		}
		r = r<<4 | rune(unhex(c))
	}
	return r, true
}
