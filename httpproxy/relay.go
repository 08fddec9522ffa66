package httpproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// The relay carries reverse mode: a byte-preserving HTTP/1.1 relay on raw
// connections (issue 16). Each message goes on as it came — start line,
// field lines in their case and order, body in its framing — less the
// hop-by-hop fields (RFC 9110 §7.6.1) and with the Host value and, when
// --upstream has a path, the request target rewritten. docs/http.md lists
// every byte it may change. What it declines (not HTTP/1.1, a target not in
// origin form, framing it cannot delimit unambiguously, heads over
// maxRequestHead, malformed heads) goes, with the rest of that connection,
// to the net/http server and the goproxy path.
//
// Connection management is the relay's own, on each side: the harness's
// Connection field is not forwarded, and the harness connection stays open
// after an exchange unless the harness asked to close it, the response was
// close-delimited, or the request body was not read to its end. The
// upstream connection (one per harness connection, kept alive between
// exchanges) is reused unless the upstream said close, answered HTTP/1.0
// without keep-alive, or sent a close-delimited body.

const (
	relayReadBuf    = 8 << 10          // bufio.Reader per side: a 1 KiB AHP request arrives whole in one
	relayOutBuf     = 4 << 10          // pending output per direction: heads, framing lines and small bodies; larger reads go out without a copy (issue 10: 1,000 large uploads in flight held 64 MiB at 32 KiB)
	maxRequestHead  = 64 << 10         // a larger head is declined to net/http (its limit is 1 MiB)
	maxResponseHead = 1 << 20          // a larger response head is a 502
	relayHeadWait   = 30 * time.Second // DefaultReadTimeout: Config.ReadTimeout replaces it
	relayIdleWait   = 120 * time.Second
	// relayParkAfter is how long a harness connection waits for its next
	// request holding its read buffer; after that it waits without one
	// (parks), so that idle connections cost no buffers (issue 27 item 4).
	relayParkAfter = time.Second
	upstreamDialTO = 10 * time.Second
)

// A relay serves reverse mode on one listener.
type relay struct {
	p        *Proxy
	declined *connQueue   // connections handed to srv
	srv      *http.Server // the net/http path for what the relay declines
	closing  atomic.Bool  // set once by shutdown: idle connections close
	mu       sync.Mutex   // guards conns
	conns    map[*relayConn]struct{}
	wg       sync.WaitGroup // one per connection the relay serves

	readers sync.Pool // *bufio.Reader of relayReadBuf bytes
	outs    sync.Pool // *[]byte of relayOutBuf capacity
}

func (p *Proxy) serveRelay(ctx context.Context, ln net.Listener) error {
	r := &relay{p: p, conns: make(map[*relayConn]struct{})}
	r.readers.New = func() any { return bufio.NewReaderSize(nil, relayReadBuf) }
	r.outs.New = func() any { b := make([]byte, 0, relayOutBuf); return &b }
	r.declined = &connQueue{ch: make(chan net.Conn), done: make(chan struct{}), addr: ln.Addr()}
	r.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: p.readTimeout,
		IdleTimeout:       relayIdleWait,
		ErrorLog:          log.New(serverLog{p}, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			id := "http"
			if d, ok := c.(*declinedConn); ok {
				id = d.id
			}
			return context.WithValue(ctx, connKey{}, id)
		},
	}
	srvDone := make(chan struct{})
	go func() { _ = r.srv.Serve(r.declined); close(srvDone) }()

	errc := make(chan error, 1)
	go func() { errc <- r.accept(ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		_ = ln.Close()
		<-errc
	}
	r.shutdown(p.drain)
	<-srvDone
	p.bg.Wait()
	return err
}

// accept serves each connection ln accepts until ln is closed.
func (r *relay) accept(ln net.Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
				errors.Is(err, syscall.ECONNABORTED) {
				// Out of descriptors, say: wait and go on, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				r.p.log.Warn().Err(err).Dur("retry_in", backoff).Msg("accept failed")
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		c := &relayConn{r: r, nc: nc, id: tap.HTTPConn(r.p.conns.Add(1))}
		r.mu.Lock()
		if r.closing.Load() {
			r.mu.Unlock()
			nc.Close()
			continue
		}
		r.conns[c] = struct{}{}
		r.wg.Add(1)
		r.mu.Unlock()
		go c.serve()
	}
}

// shutdown closes idle connections, lets the others finish their exchange
// for up to drain, then closes what is left.
func (r *relay) shutdown(drain time.Duration) {
	r.closing.Store(true)
	r.mu.Lock()
	for c := range r.conns {
		c.closeIfIdle()
	}
	r.mu.Unlock()
	sctx, cancel := context.WithTimeout(r.p.aborted, drain)
	defer cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	srvErr := r.srv.Shutdown(sctx)
	select {
	case <-done:
	case <-sctx.Done():
	}
	if srvErr != nil || sctx.Err() != nil {
		r.p.log.Warn().Dur("drain", drain).Msg("requests still in flight after the drain bound; closing their connections")
		_ = r.srv.Close()
		r.mu.Lock()
		for c := range r.conns {
			c.nc.Close()
			if up := c.upstreamNow(); up != nil {
				up.nc.Close()
			}
		}
		r.mu.Unlock()
		<-done
	}
	_ = r.declined.Close()
}

// A relayConn is one harness connection served by the relay.
type relayConn struct {
	r    *relay
	nc   net.Conn
	id   string
	br   *bufio.Reader // harness side; nil once handed to net/http
	out  *[]byte       // pooled output buffer, during an exchange
	hbuf []byte        // the current request head's bytes
	req  head
	resp head

	mu   sync.Mutex    // guards idle and up
	idle bool          // waiting for a request: shutdown may close it
	up   *upstreamConn // the upstream connection kept for the next exchange

	looped bool // the first request was checked against the tap's own upstream connections
}

func (c *relayConn) setIdle(v bool) (serve bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = v
	return !v || !c.r.closing.Load()
}

func (c *relayConn) closeIfIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle {
		c.nc.Close()
	}
}

func (c *relayConn) upstreamNow() *upstreamConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up
}

func (c *relayConn) setUpstream(u *upstreamConn) {
	c.mu.Lock()
	c.up = u
	c.mu.Unlock()
}

// awaitRequest waits until the harness sends the first byte of its next
// request, or until (the idle bound), and reports whether a byte came.
// A connection still idle after relayParkAfter gives its read buffer and
// its upstream connection's back to the pool and waits for the socket to
// become readable without one (where the platform lets it peek: a plain
// TCP connection on unix), then takes buffers again.
func (c *relayConn) awaitRequest(until time.Time) bool {
	if c.br.Buffered() == 0 && canPark(c.nc) {
		first := time.Now().Add(relayParkAfter)
		if until.Before(first) {
			first = until
		}
		_ = c.nc.SetReadDeadline(first)
		_, err := c.br.Peek(1)
		if err == nil {
			return true
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(until) {
			return false
		}
		c.br.Reset(nil)
		c.r.readers.Put(c.br)
		c.br = nil
		up := c.upstreamNow()
		if up != nil {
			up.park(c.r)
		}
		c.r.p.parked.Add(1)
		_ = c.nc.SetReadDeadline(until)
		err = waitReadable(c.nc)
		c.r.p.parked.Add(-1)
		c.br = c.r.readers.Get().(*bufio.Reader)
		c.br.Reset(c.nc)
		if up != nil {
			up.unpark(c.r)
		}
		if err != nil {
			return false
		}
	}
	_ = c.nc.SetReadDeadline(until)
	_, err := c.br.Peek(1)
	return err == nil
}

// dropUpstream closes the upstream connection; the next exchange dials.
func (c *relayConn) dropUpstream() {
	c.mu.Lock()
	u := c.up
	c.up = nil
	c.mu.Unlock()
	if u != nil {
		u.close(c.r)
	}
}

func (c *relayConn) serve() {
	c.br = c.r.readers.Get().(*bufio.Reader)
	c.br.Reset(c.nc)
	handedOff := false
	defer func() {
		c.dropUpstream()
		if !handedOff {
			c.nc.Close()
			c.br.Reset(nil)
			c.r.readers.Put(c.br)
		}
		c.r.mu.Lock()
		delete(c.r.conns, c)
		c.r.mu.Unlock()
		c.r.wg.Done()
	}()
	for {
		if !c.setIdle(true) {
			return
		}
		if !c.awaitRequest(time.Now().Add(relayIdleWait)) {
			return // the harness closed (or half-closed) an idle connection, or shutdown did
		}
		c.setIdle(false)
		if !headBuffered(c.br) {
			// The head is still coming: it has --read-timeout to arrive.
			// (A head read whole with its first byte, the usual case, needs
			// no deadline: readHead will not read from the connection.)
			_ = c.nc.SetReadDeadline(time.Now().Add(c.r.p.readTimeout))
		}
		raw, _, err := readHead(c.br, c.hbuf, maxRequestHead)
		c.hbuf = raw[:0]
		if errors.Is(err, errHeadTooLarge) {
			handedOff = c.decline(raw, err)
			return
		}
		if err != nil {
			return // a head cut short: nothing to answer
		}
		_ = c.nc.SetReadDeadline(time.Time{})
		if err := c.parseRequest(raw); err != nil {
			handedOff = c.decline(raw, err)
			return
		}
		if !c.looped {
			c.looped = true
			if c.r.p.own.has(connKeyOf(c.nc.RemoteAddr(), c.nc.LocalAddr())) {
				c.answerLoop()
				return
			}
		}
		if !c.exchange() {
			return
		}
	}
}

func (c *relayConn) parseRequest(raw []byte) error {
	h := &c.req
	*h = head{fields: h.fields[:0]}
	if err := h.parse(raw, true); err != nil {
		return err
	}
	if err := h.parseRequestLine(); err != nil {
		return err
	}
	if err := h.interpret(true); err != nil {
		return err
	}
	if h.host < 0 {
		return errors.New("no Host field")
	}
	return nil
}

// headBuffered reports whether br holds a whole request head, so that
// readHead will take it from the buffer without reading the connection:
// the buffer starts with a start line (readHead skips empty lines before
// one, and a blank line among them is no end of a head) and holds an empty
// line after it.
func headBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	if len(b) == 0 || b[0] == '\r' || b[0] == '\n' {
		return false
	}
	return bytes.Contains(b, []byte("\n\r\n")) || bytes.Contains(b, []byte("\n\n"))
}

// decline hands the connection, with the head already read, to the
// net/http server.
func (c *relayConn) decline(raw []byte, why error) bool {
	c.r.p.log.Debug().Str("conn", c.id).Msg("relay declined a request (" + why.Error() + "); serving the connection with net/http")
	d := &declinedConn{Conn: c.nc, r: io.MultiReader(bytes.NewReader(bytes.Clone(raw)), c.br), id: c.id}
	return c.r.declined.hand(d)
}

// answerLoop answers a request that came from the tap's own upstream
// connection: --upstream points at the tap itself (issue 8).
func (c *relayConn) answerLoop() {
	c.r.p.log.Warn().Str("conn", c.id).Msg("--upstream points at this tap itself; answering 508 Loop Detected")
	_, _ = c.nc.Write([]byte(loopResponse))
}

const loopMessage = "ahp-tap: --upstream points at this tap itself (a request loop)\n"

// answerChainLoop answers a request that came back through a chain of
// taps (hops.go).
func (c *relayConn) answerChainLoop() {
	c.r.p.log.Warn().Str("conn", c.id).Msg("a request came back through a chain of taps pointing at each other (" + HopField + "); answering 508 Loop Detected")
	_, _ = c.nc.Write([]byte(chainLoopResponse))
}

const chainLoopMessage = "ahp-tap: this request came back through a chain of ahp-tap taps pointing at each other (a request loop), or went through more than 8\n"

var chainLoopResponse = "HTTP/1.1 508 Loop Detected\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
	strconv.Itoa(len(chainLoopMessage)) + "\r\nConnection: close\r\n\r\n" + chainLoopMessage

var loopResponse = "HTTP/1.1 508 Loop Detected\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
	strconv.Itoa(len(loopMessage)) + "\r\nConnection: close\r\n\r\n" + loopMessage

// exchange relays one request and its response. It reports whether the
// harness connection can carry another request.
func (c *relayConn) exchange() (keep bool) {
	p := c.r.p
	// The output buffer is the exchange's only: an idle connection holds
	// no more than its two read buffers.
	c.out = c.r.outs.Get().(*[]byte)
	defer func() { c.r.outs.Put(c.out); c.out = nil }()
	rq := &c.req
	var whole []byte // the body, when it came with the head
	if rq.framing == fixedBody && int64(c.br.Buffered()) >= rq.length {
		whole, _ = c.br.Peek(int(rq.length))
	}
	hc := p.hops.check(rq, whole)
	if hc.loop {
		c.answerChainLoop()
		return false
	}
	defer p.hops.release(hc)
	method := rq.raw[rq.parts[0].s:rq.parts[0].e]
	x, upTarget := p.relayExchange(rq, c.id)
	out := rq.appendForwarded((*c.out)[:0], upTarget, p.upstreamHost)
	if hc.field != nil {
		out = withHopField(out, hc.field) // a loop is possible (hops.go)
	}

	// A body already in the buffer goes out with the head, in one write,
	// and can be sent again on a fresh connection; any other body is
	// copied alongside the response by a requestCopier, so that an
	// upstream may answer before it has read it all (Expect, 413).
	inline := rq.framing == noBody ||
		rq.framing == fixedBody && !rq.expect100 && int64(c.br.Buffered()) >= rq.length
	if rq.framing == fixedBody && inline {
		b, _ := c.br.Peek(int(rq.length))
		x.copyBytes(false, b)
		out = append(out, b...)
		_, _ = c.br.Discard(len(b))
		x.requestEnded()
	}
	*c.out = out[:0]

	var (
		up  *upstreamConn
		cp  *requestCopier
		err error
	)
	for attempt := 0; ; attempt++ {
		up, err = c.upstream(inline)
		if err != nil {
			return c.failBeforeResponse(x, nil, err, inline)
		}
		_, err = up.nc.Write(out)
		if err == nil && !inline {
			cp = c.startCopier(up, x)
		}
		var n int
		if err == nil {
			if cp == nil {
				_ = up.nc.SetReadDeadline(time.Now().Add(p.tr.ResponseHeaderTimeout))
			} // else --upstream-timeout starts when the copier has sent the body
			n, err = c.readResponse(up, method)
			if cp != nil {
				cp.headSeen()
			}
		}
		if err == nil {
			break
		}
		// The upstream closed a kept-alive connection without saying so
		// (issue 8): nothing came back and the whole request is still in
		// hand, so it goes again, once, on a fresh connection.
		if attempt == 0 && inline && up.reused && n == 0 && idleCloseError(err) {
			p.log.Debug().Str("conn", c.id).Err(err).Msg("the upstream closed a kept-alive connection; retrying on a fresh one")
			c.dropUpstream()
			continue
		}
		return c.failBeforeResponse(x, cp, err, inline)
	}
	_ = up.nc.SetReadDeadline(time.Time{})

	rs := &c.resp
	x.responseHead(rs.status, rs.hold(), rs.lengthHint())
	f := rs.framing
	if bodyless(method, rs.status) {
		f = noBody
	}
	upKeep := (rs.minor == 1 && !rs.connClose || rs.minor == 0 && rs.keepAlive) && f != untilEOF
	keep = !rq.connClose && f != untilEOF

	bc := bodyCopy{dst: c.nc, src: up.br, out: rs.appendForwarded((*c.out)[:0], nil, nil),
		audit: func(b []byte) { x.copyBytes(true, b) }}
	err = bc.copyBody(f, rs.length)
	*c.out = bc.out[:0]
	switch {
	case err == errWrite:
		// The answer did not reach the harness: for the audit, the harness
		// abandoned the request (an info fact, as on the net/http path).
		p.harnessGone(x, "the harness closed the connection before the answer reached it: "+bc.werr.Error())
		keep, upKeep = false, false
	case err != nil:
		p.log.Warn().Str("conn", c.id).Str("upstream", x.upstreamText()).
			Msg(p.creds.Text("the upstream broke off the response body: " + err.Error()))
		// The harness sees a broken-off body as broken: the connection
		// closes before the framing is complete.
		keep, upKeep = false, false
	default:
		x.responseEnded()
		if up.br.Buffered() > 0 {
			upKeep = false // bytes past the response (a body on a HEAD answer, say): out of step
		}
	}
	if cp != nil {
		// The request body: not read to its end (the upstream answered
		// first), neither connection can go on; read to its end, the
		// harness connection is in step and only the copier's last write
		// to the upstream can be left.
		if !cp.readAll.Load() {
			keep, upKeep = false, false
			c.nc.Close()
		}
		if !upKeep {
			c.dropUpstream() // unblocks a last write the upstream will not read
		}
		// Otherwise the upstream keeps the connection, so it reads the
		// rest of the body (a keep-alive server that answered early must
		// discard it to stay in step): the last write completes.
		<-cp.done
		if cp.err != nil {
			keep, upKeep = false, false
		}
	}
	x.finish()
	if upKeep {
		up.reused = true
	} else {
		c.dropUpstream()
	}
	return keep && !c.r.closing.Load()
}

// relayExchange starts the exchange of the request head rq on the harness
// connection conn, and returns the request target to send upstream in
// its place (nil: the target as received). The envelope is kept as the
// head's bytes and field spans (one copy each); the audit side makes them
// an http.Header and parses the target. Only a target with a query is
// parsed here: its credentials are learnt before anything is logged
// (origin form has no userinfo).
func (p *Proxy) relayExchange(rq *head, conn string) (x *exchange, upTarget []byte) {
	target := rq.raw[rq.parts[1].s:rq.parts[1].e]
	upTarget = p.relayTarget(target)
	held := rq.hold()
	x = &exchange{conn: conn, httpVerb: held.raw[rq.parts[0].s:rq.parts[0].e], reqHead: held,
		targetText: held.raw[rq.parts[1].s:rq.parts[1].e], upBase: p.upstreamBase}
	if bytes.IndexByte(target, '?') >= 0 {
		x.target = requestURL(x.targetText)
	}
	if bytes.Equal(upTarget, target) {
		x.upPath, upTarget = x.targetText, nil
	} else {
		x.upPath = string(upTarget)
	}
	p.startExchange(x, rq.framing != noBody, rq.lengthHint())
	return x, upTarget
}

// readResponse reads response heads from up until a final one, which it
// leaves in c.resp; interim (1xx) responses go to the harness as they come.
// n counts the response bytes read, for the retry decision.
func (c *relayConn) readResponse(up *upstreamConn, method []byte) (n int, err error) {
	for {
		raw, k, err := readHead(up.br, up.hbuf, maxResponseHead)
		up.hbuf = raw[:0]
		n += k
		if err != nil {
			if err == io.EOF && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			if errors.Is(err, errHeadTooLarge) {
				err = badResponse{err}
			}
			return n, err
		}
		rs := &c.resp
		*rs = head{fields: rs.fields[:0]}
		if err := rs.parse(raw, false); err != nil {
			return n, badResponse{err}
		}
		if err := rs.parseStatusLine(); err != nil {
			return n, badResponse{err}
		}
		if err := rs.interpret(false); err != nil {
			return n, badResponse{err}
		}
		if rs.status >= 200 {
			return n, nil
		}
		if rs.status == http.StatusSwitchingProtocols {
			// The relay never forwards Upgrade, so it never asked for this.
			return n, badResponse{errors.New("101 Switching Protocols to a request without Upgrade")}
		}
		// RFC 9110 §15.2: 1xx responses are forwarded; a 100 here is the
		// backend's answer to Expect: 100-continue, not the tap's.
		if _, werr := c.nc.Write(rs.appendForwarded((*c.out)[:0], nil, nil)); werr != nil {
			return n, werr
		}
	}
}

// failBeforeResponse answers the harness when the upstream failed before a
// final response head: 502/504 with a one-line reason, as net/http's path
// does.
func (c *relayConn) failBeforeResponse(x *exchange, cp *requestCopier, err error, inline bool) bool {
	p := c.r.p
	rq := &c.req
	c.dropUpstream() // unblocks a copier writing to it
	bodyRead := inline
	if cp != nil {
		<-cp.done
		bodyRead = cp.readAll.Load()
		if cp.err != nil && cp.err != errWrite {
			// The harness broke off its own request: there is no one to
			// answer.
			p.harnessGone(x, "the harness broke off the request body: "+cp.err.Error())
			x.finish()
			return false
		}
	} else if !inline && !rq.expect100 {
		// Drain the body for the audit copy (and to keep the connection
		// in step), as far as the audit copy goes.
		bc := bodyCopy{dst: &discardUpTo{int64(p.maxAudit)}, src: c.br, out: (*c.out)[:0],
			audit: func(b []byte) { x.copyBytes(false, b) }, pace: p.bodyPace(c.nc)}
		if bc.copyBody(rq.framing, rq.length) == nil {
			bodyRead = true
			x.requestEnded()
		}
		_ = c.nc.SetReadDeadline(time.Time{})
		*c.out = bc.out[:0]
	}
	status, msg := p.upstreamFailure(x, err, false)
	keep := bodyRead && !rq.connClose && !c.r.closing.Load()
	out := append((*c.out)[:0], "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(status), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(status)...)
	out = append(out, "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(msg)), 10)
	if !keep {
		out = append(out, "\r\nConnection: close"...)
	}
	out = append(out, "\r\n\r\n"...)
	out = append(out, msg...)
	_, werr := c.nc.Write(out)
	*c.out = out[:0]
	x.finish()
	return keep && werr == nil
}

// harnessGone records that the harness went away before the exchange was
// over (an info fact for the audit, 499 in the metrics).
func (p *Proxy) harnessGone(x *exchange, detail string) {
	detail = p.creds.Text(detail)
	x.mu.Lock()
	if x.failure == nil {
		x.failure = &tap.Note{Kind: tap.NoteHarnessGone, Time: time.Now(), Conn: x.conn, Detail: detail}
	}
	x.mu.Unlock()
	p.metrics.countRequest(x.httpVerb, 499)
	p.metrics.countFailure("harness_gone") // ahp_tap_harness_gone_total, not an upstream failure
	p.log.Debug().Str("conn", x.conn).Msg(detail)
}

// A requestCopier copies a request body to the upstream while the relay
// reads the response.
type requestCopier struct {
	readAll atomic.Bool   // the body was read from the harness to its end
	done    chan struct{} // closed when the copy is over
	err     error         // set before done closes

	mu      sync.Mutex // guards head
	head    bool       // the relay has the response head (or gave up on it)
	timeout time.Duration
	up      *upstreamConn
}

// headSeen says the response head came (or reading it failed): from now
// on the copier leaves the upstream's read deadline alone.
func (cp *requestCopier) headSeen() {
	cp.mu.Lock()
	cp.head = true
	_ = cp.up.nc.SetReadDeadline(time.Time{})
	cp.mu.Unlock()
}

// bodySent starts --upstream-timeout once the whole body is sent, as the
// net/http Transport does, unless the answer already came.
func (cp *requestCopier) bodySent() {
	cp.mu.Lock()
	if !cp.head {
		_ = cp.up.nc.SetReadDeadline(time.Now().Add(cp.timeout))
	}
	cp.mu.Unlock()
}

func (c *relayConn) startCopier(up *upstreamConn, x *exchange) *requestCopier {
	cp := &requestCopier{done: make(chan struct{}), up: up, timeout: c.r.p.tr.ResponseHeaderTimeout}
	rq := &c.req
	go func() {
		defer close(cp.done)
		buf := c.r.outs.Get().(*[]byte)
		defer c.r.outs.Put(buf)
		// readAll is set before the write that completes the body: once
		// the upstream has the whole body it may answer, and the relay
		// must then see the body as read (else it closes a harness
		// connection the response told to stay open: a reused connection
		// that fails with EOF, found by bench/soak).
		bc := bodyCopy{dst: up.nc, src: c.br, out: (*buf)[:0], audit: func(b []byte) { x.copyBytes(false, b) },
			read: func() { cp.readAll.Store(true) }, pace: c.r.p.bodyPace(c.nc)}
		var err error
		switch rq.framing {
		case fixedBody:
			err = bc.data(rq.length)
		case chunked:
			err = bc.chunked()
		}
		bc.pace(-1) // the body is read (or broken off): the deadline was for it
		if err == nil {
			cp.readAll.Store(true)
			x.requestEnded()
			if err = bc.flush(); err == nil {
				cp.bodySent()
			}
		} else if err != errWrite {
			// The harness broke off the body: the upstream will never get
			// the rest, so stop waiting for its answer.
			up.nc.Close()
		}
		*buf = bc.out[:0]
		cp.err = err
	}()
	return cp
}

// idleCloseError reports whether err is how a connection the upstream had
// closed shows up: EOF, a reset, a broken pipe.
func idleCloseError(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// badResponse is an upstream response the relay will not forward: the
// harness gets 502 instead.
type badResponse struct{ err error }

func (e badResponse) Error() string { return "malformed response: " + e.err.Error() }

// requestURL is the request target as a URL for the audit envelope and
// credential learning; a target net/url will not parse is kept as a path.
func requestURL(target string) *url.URL {
	if u, err := url.ParseRequestURI(target); err == nil {
		return u
	}
	return &url.URL{Path: target}
}

// lengthHint is the Content-Length of a fixed-length body, else -1.
func (h *head) lengthHint() int64 {
	if h.framing == fixedBody {
		return h.length
	}
	return -1
}

// relayTarget is the request target upstream: the target itself, or, when
// --upstream has a path or query, that path followed by the target's, and
// that query followed by the target's (as Proxy.target does for net/http).
func (p *Proxy) relayTarget(target []byte) []byte {
	if !p.rewriteTarget {
		return target
	}
	path, query := target, []byte(nil)
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		path, query = target[:i], target[i+1:]
	}
	out := []byte(joinPath(p.upstream.EscapedPath(), string(path)))
	switch {
	case p.upstream.RawQuery == "" && query != nil:
		out = append(append(out, '?'), query...)
	case p.upstream.RawQuery != "":
		out = append(append(out, '?'), p.upstream.RawQuery...)
		if len(query) > 0 {
			out = append(append(out, '&'), query...)
		}
	}
	return out
}

// An upstreamConn is one connection to the upstream, plain or TLS.
type upstreamConn struct {
	nc     net.Conn // *net.TCPConn or *tls.Conn
	br     *bufio.Reader
	hbuf   []byte // the current response head's bytes
	local  string // connKeyOf its local and remote addresses, registered in Proxy.own while open
	reused bool   // it has carried an exchange
	once   sync.Once
	pmu    sync.Mutex // guards br against close while its harness connection parks
}

func (u *upstreamConn) close(r *relay) {
	u.once.Do(func() {
		u.nc.Close()
		r.p.own.remove(u.local)
		// The reader may still be read by a copier that has not
		// returned yet only through u.nc, never u.br; safe to pool.
		u.pmu.Lock()
		if u.br != nil {
			u.br.Reset(nil)
			r.readers.Put(u.br)
			u.br = nil
		}
		u.pmu.Unlock()
	})
}

// park gives u's read buffer back to the pool while its harness
// connection is idle (nothing is buffered between exchanges: a kept
// connection with bytes left over is not kept). unpark takes one again.
func (u *upstreamConn) park(r *relay) {
	u.pmu.Lock()
	defer u.pmu.Unlock()
	if u.br != nil && u.br.Buffered() == 0 {
		u.br.Reset(nil)
		r.readers.Put(u.br)
		u.br = nil
	}
}

func (u *upstreamConn) unpark(r *relay) {
	u.pmu.Lock()
	defer u.pmu.Unlock()
	if u.br == nil {
		u.br = r.readers.Get().(*bufio.Reader)
		u.br.Reset(u.nc)
	}
}

// upstream returns the connection for the next exchange: the kept one, or
// a fresh one. A kept one about to carry a body that cannot be sent again
// is first checked for a close the upstream sent while it was idle.
func (c *relayConn) upstream(retryable bool) (*upstreamConn, error) {
	if u := c.upstreamNow(); u != nil {
		if retryable || idleConnAlive(u) {
			return u, nil
		}
		c.dropUpstream()
	}
	u, err := c.r.dial()
	if err != nil {
		return nil, err
	}
	c.setUpstream(u)
	return u, nil
}

// dial opens a connection to the upstream; TLS is verified against the
// system roots or --upstream-ca, never skipped.
func (r *relay) dial() (*upstreamConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), upstreamDialTO)
	defer cancel()
	d := net.Dialer{KeepAlive: 30 * time.Second}
	raw, err := d.DialContext(ctx, "tcp", r.p.upstreamAddr)
	if err != nil {
		return nil, err
	}
	local := connKeyOf(raw.LocalAddr(), raw.RemoteAddr())
	r.p.own.add(local)
	nc := raw
	if r.p.upstream.Scheme == "https" {
		tc := tls.Client(raw, r.p.relayTLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			r.p.own.remove(local)
			return nil, err
		}
		nc = tc
	}
	br := r.readers.Get().(*bufio.Reader)
	br.Reset(nc)
	return &upstreamConn{nc: nc, br: br, local: local}, nil
}

// connQueue is the net.Listener the net/http server accepts declined
// connections from.
type connQueue struct {
	ch   chan net.Conn
	done chan struct{} // closed by Close
	once sync.Once
	addr net.Addr
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error   { q.once.Do(func() { close(q.done) }); return nil }
func (q *connQueue) Addr() net.Addr { return q.addr }

func (q *connQueue) hand(c net.Conn) bool {
	select {
	case q.ch <- c:
		return true
	case <-q.done:
		return false
	}
}

// declinedConn is a harness connection the relay handed to net/http, with
// the bytes it had already read put back in front.
type declinedConn struct {
	net.Conn
	r  io.Reader
	id string
}

func (d *declinedConn) Read(p []byte) (int, error) { return d.r.Read(p) }

// ownConns holds the address pairs (local, remote) of the tap's open
// upstream connections: a harness connection whose (remote, local) pair is
// one of them is the tap talking to itself (issue 8: --upstream pointing at
// the tap answers 508). The pair, not the local port alone: the kernel
// reuses an ephemeral port for connections to different destinations.
type ownConns struct{ m sync.Map }

// connKeyOf names a connection by its two ends, from its dialer's side.
func connKeyOf(from, to net.Addr) string { return from.String() + ">" + to.String() }

func (o *ownConns) add(a string)      { o.m.Store(a, struct{}{}) }
func (o *ownConns) remove(a string)   { o.m.Delete(a) }
func (o *ownConns) has(a string) bool { _, ok := o.m.Load(a); return ok }
func (o *ownConns) dialer(d *net.Dialer) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		oc := &ownConn{Conn: c, o: o, local: connKeyOf(c.LocalAddr(), c.RemoteAddr())}
		o.add(oc.local)
		return oc, nil
	}
}

// ownConn is a net/http Transport connection registered in ownConns while
// it is open.
type ownConn struct {
	net.Conn
	o     *ownConns
	local string
	once  sync.Once
}

func (c *ownConn) Close() error {
	c.once.Do(func() { c.o.remove(c.local) })
	return c.Conn.Close()
}
