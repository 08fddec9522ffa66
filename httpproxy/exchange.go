package httpproxy

import (
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/tap"
)

// preallocBody bounds the audit buffer reserved from a Content-Length
// before any byte has arrived.
const preallocBody = 64 << 10

// auditPrefix is what an audit copy keeps of its body when the audit
// budget has no room for more: enough for the JSON-RPC id, method and
// event (tap.ScanPrefix) that pair a truncated request with its answer.
// It is held outside the budget, at most twice per exchange in flight.
const auditPrefix = 4 << 10

// auditCopy is the capped copy of one body that goes to the auditor. The
// forwarded body is never capped; only this copy is.
//
// In best-effort mode the copy reserves audit budget as it grows
// (tap.Auditor.Reserve), so that bodies in flight and bodies waiting for
// the audit share the one byte bound (issue 10): when the budget has no
// room the copy gives back what it holds, keeps only its first
// auditPrefix bytes, and its frame says it is truncated (TAP-1). In
// complete mode (a == nil) it reserves nothing and grows up to limit: the
// budget is charged when the exchange is submitted, and forwarding waits
// there for room.
type auditCopy struct {
	a         *tap.Auditor // reserves budget; nil: no reservations (complete mode)
	buf       []byte
	limit     int
	reserved  int64 // budget held for buf (its capacity); handed to the auditor with the frame
	claim     int64 // the Content-Length, 0 when unknown
	cut       bool  // the budget ran out: buf holds at most auditPrefix bytes, unreserved
	counted   bool  // the cut lost bytes and was counted (tap.Auditor.Cut)
	size      int64 // bytes seen on the wire
	truncated bool  // buf holds only a prefix of the body
}

func (c *auditCopy) write(p []byte) {
	c.size += int64(len(p))
	if room := c.limit - len(c.buf); room < len(p) {
		c.truncated = true
		if room <= 0 {
			return
		}
		p = p[:room]
	}
	if need := len(c.buf) + len(p); need > cap(c.buf) {
		hint := need
		if c.claim > 0 && need > preallocBody {
			// Past the first preallocBody bytes the claim is believed:
			// one buffer of the whole body, not a doubling series that
			// leaves its own size in garbage.
			hint = int(min(c.claim, int64(c.limit)))
		}
		c.grow(need, hint)
		if room := cap(c.buf) - len(c.buf); room < len(p) {
			c.lose() // cut: the prefix is full
			p = p[:room]
		}
	}
	c.buf = append(c.buf, p...)
}

// grow makes room in buf for need bytes, hint or more if it can. Without
// the budget for need, the copy is cut to a prefix.
func (c *auditCopy) grow(need, hint int) {
	if c.cut {
		return
	}
	double := min(max(need, 2*cap(c.buf), 512), c.limit)
	newCap := max(double, min(hint, c.limit))
	if c.a != nil {
		// The most it would like, else the usual doubling, else only what
		// it needs.
		got := 0
		for _, want := range [...]int{newCap, double, need} {
			if c.a.Reserve(int64(want) - c.reserved) {
				got = want
				break
			}
		}
		if got == 0 {
			c.cutToPrefix()
			return
		}
		newCap, c.reserved = got, int64(got)
	}
	nb := make([]byte, len(c.buf), newCap)
	copy(nb, c.buf)
	c.buf = nb
}

// cutToPrefix gives the copy's budget back and keeps its first
// auditPrefix bytes, outside the budget.
func (c *auditCopy) cutToPrefix() {
	keep := min(len(c.buf), auditPrefix)
	nb := make([]byte, keep, auditPrefix)
	copy(nb, c.buf)
	lost := keep < len(c.buf)
	c.buf = nb
	c.a.Release(c.reserved)
	c.reserved, c.cut = 0, true
	if lost {
		c.lose()
	}
}

// lose marks a cut copy truncated, and counts it once: a body that fits
// its prefix whole is audited whole.
func (c *auditCopy) lose() {
	c.truncated = true
	if !c.counted {
		c.counted = true
		c.a.Cut()
	}
}

// presize reserves room for a body of Content-Length n before its bytes
// arrive: a size hint only (it is the sender's claim), so at most
// preallocBody.
func (c *auditCopy) presize(n int64) {
	if n > 0 && c.buf == nil {
		c.claim = n
		h := int(min(n, int64(c.limit), preallocBody))
		c.grow(h, h)
	}
}

// release gives back the budget the copy holds (its bytes are not
// submitted as a frame).
func (c *auditCopy) release() {
	if c.a != nil {
		c.a.Release(c.reserved)
	}
	c.reserved = 0
}

// An exchange is one HTTP request and its response as the auditor sees
// them. The forwarding path fills it through auditedBody readers; finish
// hands the frames to the auditor in order: the request, then the response.
type exchange struct {
	p        *Proxy
	conn     string
	start    time.Time
	httpVerb string
	// The request's envelope as received (its credentials learnt): the
	// audit side builds the redacted tap.HTTPMeta from it (reqMeta), so
	// that the forwarding goroutine does not. target is the parsed
	// request target: the net/http path's, or a relay target with a query
	// (parsed to learn its credentials); otherwise the audit side parses
	// targetText.
	target     *url.URL
	targetText string
	reqHead    heldHead
	// The upstream URL is upBase followed by upPath (the relay keeps the
	// two, so that the forwarding goroutine does not join them); upText
	// is it redacted, for diagnostics and envelopes (upstreamText).
	upBase, upPath string
	upOnce         sync.Once
	upText         string

	mu      sync.Mutex // guards the fields below: the transport may still read the request body when the response is done
	req     auditCopy
	reqEOF  bool // the request body was read to its end
	reqSent bool // the request frame went to the auditor; req is no longer ours
	resp    auditCopy
	respEOF bool // the response body was read to its end
	// The final response's envelope as received (respSeen: there was
	// one); the audit side builds its tap.HTTPMeta (respMeta).
	respSeen   bool
	respStatus int
	respHead   heldHead
	respTime   time.Time
	finished   bool      // finish ran
	failure    *tap.Note // set when ahp-tap answered (upstream failure) or the harness went away
	// reqFrame and respFrame are the frames handed to the auditor (item),
	// kept in the exchange: no allocation of their own on the forwarding
	// goroutine. prep, made once, prepares either (Item.Prepare).
	reqFrame, respFrame tap.Frame
	prep                func(*tap.Frame)

	// inj and swallowed are the notes of a fault injected for this
	// exchange (--inject, inject.go): after the request, and after the
	// backend's answer the tap kept from the harness.
	inj, swallowed *tap.Note

	// The request handed over alone, unanswered after Config.Probe
	// (submitEarly): probe is its timer, early says it was handed over
	// (earlyDone closes when that is done), earlyLost that the auditor
	// had no room for it.
	probe     *time.Timer
	early     bool
	earlyDone chan struct{}
	earlyLost bool
}

func (p *Proxy) newExchange(r *http.Request, conn, upstream string) *exchange {
	hasBody := r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
	// A copy: the header goes to the audit side, and the forwarding
	// code may change r's before then.
	x := &exchange{conn: conn, httpVerb: r.Method, target: r.URL, reqHead: heldHead{h: r.Header.Clone()}, upBase: upstream}
	return p.startExchange(x, hasBody, r.ContentLength)
}

// startExchange starts x, made from a request's envelope (method, target,
// header: the exchange's to keep, the audit side reads it later; and the
// upstream URL): hasBody says whether a body follows, contentLength is
// its Content-Length (-1 when unknown). The relay and the net/http paths
// both start here. Only the credentials are learnt here; the redacted
// envelope is built on the audit side.
func (p *Proxy) startExchange(x *exchange, hasBody bool, contentLength int64) *exchange {
	x.p, x.start = p, time.Now()
	x.req.limit, x.resp.limit = p.maxAudit, p.maxAudit
	if !p.auditor.Complete() {
		x.req.a, x.resp.a = p.auditor, p.auditor
	}
	x.reqEOF = !hasBody
	if hasBody {
		x.req.presize(contentLength)
	}
	x.reqHead.learn(&p.creds.Credentials)
	if x.target != nil {
		p.creds.AddURL(x.target)
	}
	if p.probe > 0 && x.req.a != nil {
		x.probe = time.AfterFunc(p.probe+tap.ClockGrace, x.submitEarly)
	}
	return x
}

// submitEarly hands the request to the auditor alone when no answer has
// begun by the shortest deadline: with a NoteDeadline, so that the
// session judges the deadlines that passed by then (CORR-3 as the
// deadline passes, issue 21 item 8). finish then hands over only the
// answer. A request whose body is still coming, or whose answer has
// begun, is left to finish.
func (x *exchange) submitEarly() {
	x.mu.Lock()
	if x.finished || x.early || !x.reqEOF || !x.respTime.IsZero() {
		x.mu.Unlock()
		return
	}
	x.early, x.reqSent, x.earlyDone = true, true, make(chan struct{})
	x.mu.Unlock()
	defer close(x.earlyDone)
	at := x.p.SafeClock(time.Now().Add(-tap.ClockGrace))
	ok := x.p.auditor.SubmitAll(
		x.item(tap.FromHarness, x.start, &x.req),
		tap.Item{Note: &tap.Note{Kind: tap.NoteDeadline, Time: at, Conn: x.conn}})
	x.mu.Lock()
	x.earlyLost = !ok
	x.mu.Unlock()
}

// requestBody is the harness's request body on its way upstream; its bytes
// are also copied into the exchange's audit copy. Close does not close the
// harness's body (the server does that when the handler returns), so that
// after an upstream failure the rest of it can still be read for the audit.
type requestBody struct {
	rc io.ReadCloser
	x  *exchange
	// pace, when set, bounds a slow body (Proxy.bodyPace).
	pace func(got int64)
	got  int64
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.pace != nil {
		b.pace(b.got)
	}
	n, err := b.rc.Read(p)
	b.got += int64(n)
	if n > 0 {
		b.x.copyBytes(false, p[:n])
	}
	if err == io.EOF {
		b.x.mu.Lock()
		b.x.reqEOF = true
		b.x.mu.Unlock()
		if b.pace != nil {
			b.pace(-1)
			b.pace = nil
		}
	}
	return n, err
}

func (b *requestBody) Close() error { return nil }

// drain reads what is left of the request body into the audit copy, up to
// the audit limit, after the upstream failed before reading it all.
func (b *requestBody) drain(limit int64) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, limit+1))
}

// responseBody is the upstream's response body on its way to the harness;
// its bytes are also copied into the exchange's audit copy. EOF or Close,
// whichever comes first, finishes the exchange.
type responseBody struct {
	rc   io.ReadCloser
	x    *exchange
	once sync.Once // runs finish once
	// abort makes a read error abort the harness's response (panic with
	// http.ErrAbortHandler) for callers that would otherwise end a
	// broken-off body cleanly: goproxy's plain-HTTP forwarding, which
	// runs on the net/http server's goroutine.
	abort bool
}

func (b *responseBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.x.copyBytes(true, p[:n])
	}
	switch {
	case err == io.EOF:
		b.x.mu.Lock()
		b.x.respEOF = true
		b.x.mu.Unlock()
		// Finish now, before the caller writes the last bytes to the
		// harness: once the harness has its answer, the audit has the
		// exchange (goproxy's MITM loop closes the body only later).
		b.once.Do(b.x.finish)
	case err != nil && b.abort:
		b.x.p.log.Warn().Str("conn", b.x.conn).Str("upstream", b.x.upstreamText()).
			Msg(b.x.p.creds.Text("the upstream broke off the response body: " + err.Error()))
		panic(http.ErrAbortHandler)
	}
	return n, err
}

func (b *responseBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.x.finish)
	return err
}

func (x *exchange) copyBytes(response bool, p []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if response {
		if !x.finished { // after finish the copy (and its budget) is the auditor's
			x.resp.write(p)
		}
	} else if !x.reqSent {
		x.req.write(p)
	}
}

// responseHeaders records the upstream's response envelope (a copy of its
// header: the forwarding code may change resp's).
func (x *exchange) responseHeaders(resp *http.Response) {
	x.responseHead(resp.StatusCode, heldHead{h: resp.Header.Clone()}, resp.ContentLength)
}

// responseHead records the upstream's final response envelope: status,
// header (the exchange's to keep) and Content-Length (-1 when unknown).
func (x *exchange) responseHead(status int, h heldHead, contentLength int64) {
	now := time.Now()
	x.mu.Lock()
	if !x.finished { // after finish the envelope is the audit side's to read
		x.respSeen, x.respStatus, x.respHead, x.respTime = true, status, h, now
		x.resp.presize(contentLength)
		if x.probe != nil {
			x.p.headsMu.Lock()
			x.p.heads[x] = now
			x.p.headsMu.Unlock()
		}
	}
	x.mu.Unlock()
	x.p.metrics.observeLatency(now.Sub(x.start))
}

// requestEnded says the request body was read to its end.
func (x *exchange) requestEnded() {
	x.mu.Lock()
	x.reqEOF = true
	x.mu.Unlock()
}

// responseEnded says the response body was read to its end.
func (x *exchange) responseEnded() {
	x.mu.Lock()
	x.respEOF = true
	x.mu.Unlock()
}

// finish hands the exchange to the auditor, all of it or none: the request
// frame, then the response as a frame when it carries a JSON-RPC message
// (status 200 with a body) or as a note otherwise (or the upstream failure
// note). A body not read to its end is audited as a truncated copy: TAP-1,
// not a finding about the traffic.
func (x *exchange) finish() {
	x.mu.Lock()
	if x.finished {
		x.mu.Unlock()
		return
	}
	x.finished = true
	x.reqSent = true // later reads of the request body no longer touch req
	// From here on req, resp and the response's envelope are only read:
	// the audit side reads them (prepareRequest, prepareResponse).
	c, seen, status, failure := &x.resp, x.respSeen, x.respStatus, x.failure
	inj, swallowed := x.inj, x.swallowed
	early, earlyDone := x.early, x.earlyDone
	if !x.reqEOF && !early {
		x.req.truncated = true // the upstream answered before reading it all
	}
	if !x.respEOF {
		// The copy stopped early (the harness went away, or the upstream
		// broke off): what was read is only a prefix, not a message.
		c.truncated = true
	}
	x.mu.Unlock()
	if x.probe != nil {
		x.probe.Stop()
		// The response head's time holds the proxy's clock back
		// (SafeClock) until the answer is in the auditor's queue, where
		// the auditor sees it before it tells the session the time: let
		// go of it only then, on the way out.
		defer func() {
			x.p.headsMu.Lock()
			delete(x.p.heads, x)
			x.p.headsMu.Unlock()
		}()
	}
	items := make([]tap.Item, 0, 4)
	if early {
		<-earlyDone // the request is handed over (or dropped) before its answer
		x.mu.Lock()
		lost := x.earlyLost
		x.mu.Unlock()
		if lost {
			// The request was dropped: so is its answer (a response
			// without its request would look unsolicited).
			c.release()
			x.p.auditor.Drop(1)
			return
		}
	} else {
		items = append(items, x.item(tap.FromHarness, x.start, &x.req))
	}
	if inj != nil {
		items = append(items, tap.Item{Note: inj})
	}
	switch {
	case failure != nil:
		c.release()
		items = append(items, tap.Item{Note: failure})
	case !seen:
		c.release()
	case status == http.StatusOK && c.size > 0:
		x.p.metrics.countRequest(x.httpVerb, status)
		items = append(items, x.item(tap.FromBackend, x.respTime, c))
	default:
		defer c.release() // its bytes are searched, not queued
		x.p.metrics.countRequest(x.httpVerb, status)
		// A response without a JSON-RPC message: its body is not a frame,
		// but it is still searched for credentials (AUTH-1). Rare: its
		// note is built here.
		items = append(items, tap.Item{Note: x.p.creds.ResponseNote(x.respTime, x.conn, httpaudit.Body{Bytes: c.buf, Size: c.size}, x.respMeta())})
	}
	if swallowed != nil {
		items = append(items, tap.Item{Note: swallowed})
	}
	if len(items) > 0 {
		x.p.auditor.SubmitAll(items...)
	}
}

// item is the audit item of one body. Its frame holds the copy as read;
// the audit goroutine builds the envelope and redacts the copy (prepare,
// as Item.Prepare) before anything checks, logs or captures it, so that
// neither costs the forwarding goroutine (issue 27 item 2).
func (x *exchange) item(dir tap.Direction, t time.Time, c *auditCopy) tap.Item {
	f := &x.respFrame
	if c == &x.req {
		f = &x.reqFrame
	}
	*f = tap.Frame{Dir: dir, Time: t, Transport: tap.HTTP, Conn: x.conn, Raw: c.buf}
	if x.prep == nil {
		x.prep = x.prepare
	}
	return tap.Item{Frame: f, Reserved: c.reserved, Prepare: x.prep}
}

// prepare is Item.Prepare for either of the exchange's frames.
func (x *exchange) prepare(f *tap.Frame) {
	if f == &x.reqFrame {
		x.prepareRequest(f)
	} else {
		x.prepareResponse(f)
	}
}

// prepareRequest fills the request's frame on the audit side: the body
// redacted, the envelope.
func (x *exchange) prepareRequest(f *tap.Frame) { x.p.creds.Fill(f, x.req.body(), x.reqMeta()) }

// prepareResponse fills the final response's frame on the audit side.
func (x *exchange) prepareResponse(f *tap.Frame) { x.p.creds.Fill(f, x.resp.body(), x.respMeta()) }

// body is the copy as the audit sees it.
func (c *auditCopy) body() httpaudit.Body {
	return httpaudit.Body{Bytes: c.buf, Size: c.size, Truncated: c.truncated}
}

// reqMeta builds the request's audit envelope, redacted.
func (x *exchange) reqMeta() *tap.HTTPMeta {
	if x.targetText == "" { // the net/http path
		return x.p.creds.RequestMeta(x.httpVerb, x.p.creds.RedactURL(x.target), x.reqHead.header(), x.upstreamText())
	}
	t := x.relayTarget()
	return x.p.creds.RequestMetaRedacted(x.httpVerb, t.url, x.p.auditHeader(x.reqHead, &x.p.lastReqHead), t.upstream)
}

// A headMemo is a relay head and its audit header, redacted. A harness
// sends the same head with every request, and a backend the same answer
// head for a second (its Date): building and redacting the header map
// again cost the audit side more than the rest of the envelope. The memo
// holds while no credential is learnt (Credentials.Learnt). Its header is
// shared by the envelopes made from it: nothing changes a tap.HTTPMeta's
// header once it is built.
type headMemo struct {
	raw    string
	learnt uint64
	header http.Header
}

// auditHeader returns the relay head hh's audit header, redacted: the one
// memo holds when hh is the same head and nothing was learnt since.
func (p *Proxy) auditHeader(hh heldHead, memo *atomic.Pointer[headMemo]) http.Header {
	learnt := p.creds.Learnt() // before redacting: a credential learnt meanwhile voids the memo
	if m := memo.Load(); m != nil && m.learnt == learnt && m.raw == hh.raw {
		return m.header
	}
	h := hh.header()
	p.creds.RedactHeader(h)
	memo.Store(&headMemo{raw: hh.raw, learnt: learnt, header: h})
	return h
}

// A targetMemo is a relay request target and its upstream URL, redacted.
// A harness sends the same target again and again: parsing and rendering
// it, and its upstream URL, cost the audit side more than the header did.
// The memo holds while no credential is learnt (Credentials.Learnt).
type targetMemo struct {
	target, upPath string // as received, and as forwarded
	learnt         uint64
	url, upstream  string
}

// relayTarget is the relay's request target and upstream URL redacted:
// the last request's when it went to the same place and nothing was
// learnt since.
func (x *exchange) relayTarget() *targetMemo {
	learnt := x.p.creds.Learnt() // before redacting: a credential learnt meanwhile voids the memo
	if t := x.p.lastTarget.Load(); t != nil && t.learnt == learnt && t.target == x.targetText && t.upPath == x.upPath {
		return t
	}
	u := x.target
	if u == nil {
		u = requestURL(x.targetText)
	}
	t := &targetMemo{target: x.targetText, upPath: x.upPath, learnt: learnt,
		url: x.p.creds.RedactURL(u), upstream: x.p.creds.RedactURLString(x.upBase + x.upPath)}
	x.p.lastTarget.Store(t)
	return t
}

// respMeta builds the final response's audit envelope, redacted, from
// what finish read of it.
func (x *exchange) respMeta() *tap.HTTPMeta {
	if x.respHead.raw == "" { // the net/http path
		return x.p.creds.ResponseMeta(x.respStatus, x.respHead.header(), x.upstreamText(), x.respTime.Sub(x.start))
	}
	return x.p.creds.ResponseMetaRedacted(x.respStatus, x.p.auditHeader(x.respHead, &x.p.lastRespHead), x.upstreamText(), x.respTime.Sub(x.start))
}

// upstreamText is the upstream URL redacted, for diagnostics and envelopes.
func (x *exchange) upstreamText() string {
	x.upOnce.Do(func() {
		switch {
		case x.targetText != "":
			x.upText = x.relayTarget().upstream
		case x.upBase != "":
			x.upText = x.p.creds.RedactURLString(x.upBase)
		}
	})
	return x.upText
}
