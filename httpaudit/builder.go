// Package httpaudit builds the audit copy of an HTTP exchange: the frames
// and notes a tap.Session checks, with every credential the harness sent
// redacted before anything is checked, logged or captured (AHP-AUTH-001).
//
// It is the one implementation the HTTP tap (httpproxy), HAR input (har)
// and both mock peers use, so that the same exchange gives the same audit
// copy and the same AUTH-1 findings whichever way it reached ahp-tap:
// the same headers redacted (Authorization keeps its scheme; the defaults
// and --redact-header), the same query parameters, userinfo, and the same
// escaped forms of a credential found in bodies, URLs and diagnostics.
//
// It also holds the rules for secret-like names and URL parts used where
// no credential was learned from a header: a registration document
// embedded in a capture header, an OTLP endpoint in a diagnostic.
package httpaudit

import (
	"net/http"
	"net/url"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A Builder makes the audit frames and notes of HTTP exchanges. It
// remembers the credentials each request carries (Credentials), so that
// they are found in every later body, header, URL and diagnostic. The
// zero value redacts the defaults; Configure it before first use
// otherwise. Methods are safe for concurrent use.
type Builder struct {
	Credentials
}

// Request learns the credentials of a request's header and target and
// returns its envelope for the audit: the target and upstream URLs and
// (a copy of) the header redacted. upstream is where the request went (""
// when it is the target itself: a HAR entry, a mock peer).
func (b *Builder) Request(method string, target *url.URL, h http.Header, upstream string) *tap.HTTPMeta {
	b.Learn(target, h)
	if upstream != "" {
		upstream = b.RedactURLString(upstream)
	}
	return b.RequestMeta(method, b.RedactURL(target), h.Clone(), upstream)
}

// Learn learns the credentials of a request's header and target: the part
// of Request that must come before anything about the request is logged,
// so that a diagnostic never shows them. A relay calls it as the request
// arrives and leaves RequestMeta (and Fill) to the audit side.
func (b *Builder) Learn(target *url.URL, h http.Header) {
	b.Add(h)
	b.AddURL(target)
}

// RequestMeta is Request without learning, for a relay that learnt as the
// request arrived: the envelope, with what was learnt so far redacted.
// target and upstream are redacted already (RedactURL, RedactURLString:
// the relay keeps them for the next request to the same target, and
// shares upstream with the response's envelope). h is the caller's to give
// away: it is redacted in place (RedactHeader) and becomes the envelope's
// header.
func (b *Builder) RequestMeta(method, target string, h http.Header, upstream string) *tap.HTTPMeta {
	b.RedactHeader(h)
	return b.RequestMetaRedacted(method, target, h, upstream)
}

// RequestMetaRedacted is RequestMeta for a header redacted already
// (RedactHeader): a relay keeps the last one for the next request with the
// same head, so h may be shared between envelopes and is not changed.
func (b *Builder) RequestMetaRedacted(method, target string, h http.Header, upstream string) *tap.HTTPMeta {
	return &tap.HTTPMeta{
		Method:             method,
		URL:                target,
		Header:             h,
		AuthorizationCount: len(h["Authorization"]), // redaction keeps every value
		Upstream:           upstream,
	}
}

// RequestText is Request for a target known only as text (a HAR entry's
// URL). A target that does not parse as a URL is searched for remembered
// credentials only.
func (b *Builder) RequestText(method, target string, h http.Header) *tap.HTTPMeta {
	if u, err := url.Parse(target); err == nil {
		return b.Request(method, u, h, "")
	}
	b.Add(h)
	return &tap.HTTPMeta{Method: method, URL: b.RedactString(target), Header: b.MetaHeader(h),
		AuthorizationCount: len(h.Values("Authorization"))}
}

// Response returns a response's envelope for the audit: (a copy of) its
// header redacted. upstream is the request's (already redacted) Upstream.
func (b *Builder) Response(status int, h http.Header, upstream string, latency time.Duration) *tap.HTTPMeta {
	return b.ResponseMeta(status, h.Clone(), upstream, latency)
}

// ResponseMeta is Response for a header the caller gives away: h is
// redacted in place and becomes the envelope's.
func (b *Builder) ResponseMeta(status int, h http.Header, upstream string, latency time.Duration) *tap.HTTPMeta {
	b.RedactHeader(h)
	return b.ResponseMetaRedacted(status, h, upstream, latency)
}

// ResponseMetaRedacted is ResponseMeta for a header redacted already
// (RedactHeader), which may be shared between envelopes and is not
// changed.
func (b *Builder) ResponseMetaRedacted(status int, h http.Header, upstream string, latency time.Duration) *tap.HTTPMeta {
	return &tap.HTTPMeta{
		Status:    status,
		Header:    h,
		Upstream:  upstream,
		LatencyMs: float64(latency.Microseconds()) / 1000,
	}
}

// A Body is one HTTP body as the audit got it.
type Body struct {
	// Bytes is the audit's copy (at most the audit cap).
	Bytes []byte
	// Size is the body's size on the wire (len(Bytes) when 0).
	Size int64
	// Truncated says Bytes is only a prefix of the body.
	Truncated bool
}

// Frame builds the audit frame of one body carrying a JSON-RPC message:
// its copy with every remembered credential replaced, and m with the
// body's size and how many credentials it held (AUTH-1).
func (b *Builder) Frame(dir tap.Direction, t time.Time, conn string, body Body, m *tap.HTTPMeta) *tap.Frame {
	f := &tap.Frame{Dir: dir, Time: t, Transport: tap.HTTP, Conn: conn}
	b.Fill(f, body, m)
	return f
}

// Fill sets what Frame derives from the body and the envelope on a frame
// not yet decoded: Raw (the body redacted), HTTP (m with the body's size
// and credential count), Truncated and Size.
func (b *Builder) Fill(f *tap.Frame, body Body, m *tap.HTTPMeta) {
	raw, leaks := b.Redact(body.Bytes)
	size := body.Size
	if size == 0 {
		size = int64(len(body.Bytes))
	}
	m.BodySize, m.CredentialInBody = size, leaks
	f.Raw, f.HTTP, f.Truncated, f.Size = raw, m, body.Truncated, int(size)
}

// ResponseNote builds the note of a response without a JSON-RPC message
// (any status but a 200 with a body): the body is not recorded, but it is
// searched for credentials (AUTH-1), as a frame's is.
func (b *Builder) ResponseNote(t time.Time, conn string, body Body, m *tap.HTTPMeta) *tap.Note {
	_, leaks := b.Redact(body.Bytes)
	m.BodySize, m.CredentialInBody = body.Size, leaks
	if m.BodySize == 0 {
		m.BodySize = int64(len(body.Bytes))
	}
	return &tap.Note{Kind: tap.NoteHTTPResponse, Time: t, Conn: conn, HTTP: m}
}

// Text redacts a diagnostic (an error message, a description of a
// message) for a log or the terminal: every remembered credential in it,
// as written or escaped, and the secret parts of any URL in it.
func (b *Builder) Text(s string) string {
	return b.RedactString(URLsIn(s))
}
