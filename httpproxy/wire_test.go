package httpproxy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The wire-fidelity suite (issue 16): both peers are raw TCP connections,
// no HTTP library in the probe. Each case is a script of writes and exact
// reads on the harness side (h) and the upstream side (u); the bytes each
// peer reads equal the bytes the other wrote, except the documented
// rewrites (Host, the target under an --upstream path) and the hop-by-hop
// fields (docs/http.md).

// wireStep is one action of a script.
type wireStep struct {
	side byte // 'h' harness, 'u' upstream
	op   byte // 'w' write, 'r' read exactly, 'e' read EOF, 'c' close, 'a' accept a new connection, 's' shut down writing
	data string
}

func hw(s string) wireStep { return wireStep{'h', 'w', s} }
func hr(s string) wireStep { return wireStep{'h', 'r', s} }
func uw(s string) wireStep { return wireStep{'u', 'w', s} }
func ur(s string) wireStep { return wireStep{'u', 'r', s} }

var (
	hEOF       = wireStep{'h', 'e', ""}
	uClose     = wireStep{'u', 'c', ""}
	uAccept    = wireStep{'u', 'a', ""}
	hShutWrite = wireStep{'h', 's', ""}
)

type wireCase struct {
	name   string
	upPath string // appended to the upstream URL (--upstream with a path)
	steps  []wireStep
	audit  []string   // the audit frames' bodies, in order, when checked
	split  *rand.Rand // when set, writes go out in random pieces
}

// rawUpstream is a listener whose connections the script drives.
type rawUpstream struct {
	ln   net.Listener
	host string // host:port as the tap names it in Host
	pool *x509.CertPool
}

func newRawUpstream(t *testing.T, useTLS bool) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln, host: ln.Addr().String()}
	if useTLS {
		// Borrow httptest's certificate for 127.0.0.1.
		s := httptest.NewTLSServer(http.NotFoundHandler())
		cfg := s.TLS.Clone()
		cfg.NextProtos = []string{"http/1.1"}
		u.pool = x509.NewCertPool()
		u.pool.AddCert(s.Certificate())
		s.Close()
		u.ln = tls.NewListener(ln, cfg)
	}
	t.Cleanup(func() { ln.Close() })
	return u
}

func (u *rawUpstream) url() string {
	if u.pool != nil {
		return "https://" + u.host
	}
	return "http://" + u.host
}

// readExact reads len(want) bytes (or up to EOF) within a bound and
// compares them with want.
func readExact(t *testing.T, who string, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	n, err := io.ReadFull(c, got)
	if n != len(want) || string(got) != want {
		t.Fatalf("%s read %q (err %v),\n want %q", who, got[:n], err, want)
	}
}

// nothingMore asserts that c has no byte left to read right now.
func nothingMore(t *testing.T, who string, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var b [256]byte
	n, err := c.Read(b[:])
	if n > 0 {
		t.Errorf("%s got extra bytes %q", who, b[:n])
	}
	var ne net.Error
	if n == 0 && err != nil && !(errors.As(err, &ne) && ne.Timeout()) && err != io.EOF {
		t.Errorf("%s: %v", who, err)
	}
}

// runWire runs a script; trickle writes every byte on its own, so that the
// tap sees heads, chunk lines and bodies split at every possible point.
func runWire(t *testing.T, tc wireCase, useTLS, trickle bool) {
	up := newRawUpstream(t, useTLS)
	tt := startTap(t, Config{Upstream: mustURL(t, up.url()+tc.upPath), RootCAs: up.pool})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tap log:\n%s", tt.diag.String())
		}
	})
	h, err := net.Dial("tcp", strings.TrimPrefix(tt.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	expand := func(s string) string {
		return strings.NewReplacer("{H}", strings.TrimPrefix(tt.url, "http://"), "{U}", up.host).Replace(s)
	}
	var uc net.Conn
	accept := func() {
		if uc != nil {
			uc.Close()
		}
		type res struct {
			c   net.Conn
			err error
		}
		ch := make(chan res, 1)
		go func() { c, err := up.ln.Accept(); ch <- res{c, err} }()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatal(r.err)
			}
			uc = r.c
		case <-time.After(5 * time.Second):
			up.ln.Close()
			t.Fatal("the tap did not connect to the upstream")
		}
	}
	for i, s := range tc.steps {
		if s.side == 'u' && uc == nil && s.op != 'a' {
			accept()
		}
		c, who := h, fmt.Sprintf("step %d: harness", i)
		if s.side == 'u' {
			c, who = uc, fmt.Sprintf("step %d: upstream", i)
		}
		switch s.op {
		case 'w':
			b := []byte(expand(s.data))
			step := len(b)
			if trickle {
				step = 1
			}
			for len(b) > 0 {
				k := min(step, len(b))
				if tc.split != nil {
					k = min(1+tc.split.IntN(64), len(b))
				}
				if _, err := c.Write(b[:k]); err != nil {
					t.Fatalf("%s write: %v", who, err)
				}
				b = b[k:]
			}
		case 'r':
			readExact(t, who, c, expand(s.data))
		case 'e':
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if b, err := io.ReadAll(c); len(b) > 0 || err != nil {
				t.Fatalf("%s: want EOF, got %q (err %v)", who, b, err)
			}
		case 'c':
			c.Close()
			uc = nil
		case 'a':
			accept()
		case 's':
			if cw, ok := c.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
		}
	}
	nothingMore(t, "harness", h)
	if uc != nil {
		nothingMore(t, "upstream", uc)
		uc.Close()
	}
	h.Close()
	tt.stop()
	if tc.audit != nil {
		var got []string
		for _, it := range readCapture(t, tt.capPath) {
			if it.Frame != nil {
				got = append(got, string(it.Frame.Raw))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.audit) {
			t.Errorf("audited bodies = %q, want %q", got, tc.audit)
		}
	}
}

const (
	wireReq  = `{"jsonrpc":"2.0","id":"w1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"w1"}}}`
	wireResp = `{"jsonrpc":"2.0","id":"w1","result":{"protocolVersion":"draft"}}`
)

func cl(s string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(s), s) }

func wireCases() []wireCase {
	post := "POST /agent-hooks HTTP/1.1\r\n"
	chunkedReq := "1a;ext=1\r\n" + wireReq[:26] + "\r\n" + fmt.Sprintf("%X ; name=\"q\"\r\n", len(wireReq)-26) + wireReq[26:] + "\r\n" +
		"0;last\r\nX-Checksum: abc\r\nx-other: 1\r\n\r\n"
	chunkedResp := "7;a=b\r\n" + wireResp[:7] + "\r\n" + fmt.Sprintf("%x\r\n", len(wireResp)-7) + wireResp[7:] + "\r\n0\r\nServer-Timing: db;dur=1\r\n\r\n"
	return []wireCase{{
		name: "header case, order and repeats; Content-Length bodies",
		steps: []wireStep{
			hw(post + "host: {H}\r\nx-lower: a\r\nX-MiXeD-CaSe:  spaced value \r\nX-Rep: 1\r\nx-rep: 2\r\nX-Rep: 3\r\ncontent-type: application/json\r\nUser-Agent: h/1\r\n" + cl(wireReq)),
			ur(post + "host: {U}\r\nx-lower: a\r\nX-MiXeD-CaSe:  spaced value \r\nX-Rep: 1\r\nx-rep: 2\r\nX-Rep: 3\r\ncontent-type: application/json\r\nUser-Agent: h/1\r\n" + cl(wireReq)),
			uw("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nX-Rep: a\r\nx-rep: b\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nweird_NAME: v\r\n" + cl(wireResp)),
			hr("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nX-Rep: a\r\nx-rep: b\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nweird_NAME: v\r\n" + cl(wireResp)),
		},
		audit: []string{wireReq, wireResp},
	}, {
		name: "chunked bodies with extensions and trailers, both ways",
		steps: []wireStep{
			hw(post + "Host: {H}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n" + chunkedReq),
			ur(post + "Host: {U}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n" + chunkedReq),
			uw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedResp),
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedResp),
		},
		audit: []string{wireReq, wireResp}, // the audit sees the bodies without the chunking
	}, {
		name: "close-delimited response",
		steps: []wireStep{
			hw(post + "Host: {H}\r\nContent-Type: application/json\r\n" + cl(wireReq)),
			ur(post + "Host: {U}\r\nContent-Type: application/json\r\n" + cl(wireReq)),
			uw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + wireResp), uClose,
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + wireResp), hEOF,
		},
		audit: []string{wireReq, wireResp},
	}, {
		name: "HEAD, 204 and 304 carry no body; the connection stays in step",
		steps: []wireStep{
			hw("HEAD /agent-hooks HTTP/1.1\r\nHost: {H}\r\n\r\n"),
			ur("HEAD /agent-hooks HTTP/1.1\r\nHost: {U}\r\n\r\n"),
			uw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1234\r\n\r\n"),
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1234\r\n\r\n"),
			hw("GET /a HTTP/1.1\r\nHost: {H}\r\n\r\n"),
			ur("GET /a HTTP/1.1\r\nHost: {U}\r\n\r\n"),
			uw("HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"),
			hr("HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"),
			hw("GET /b HTTP/1.1\r\nHost: {H}\r\nIf-None-Match: \"x\"\r\n\r\n"),
			ur("GET /b HTTP/1.1\r\nHost: {U}\r\nIf-None-Match: \"x\"\r\n\r\n"),
			uw("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 99\r\n\r\n"),
			hr("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 99\r\n\r\n"),
			hw(post + "Host: {H}\r\nContent-Type: application/json\r\n" + cl(wireReq)),
			ur(post + "Host: {U}\r\nContent-Type: application/json\r\n" + cl(wireReq)),
			uw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)),
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)),
		},
	}, {
		name: "1xx responses are forwarded as the backend sends them",
		steps: []wireStep{
			hw(post + "Host: {H}\r\nContent-Type: application/json\r\n" + cl(wireReq)),
			ur(post + "Host: {U}\r\nContent-Type: application/json\r\n" + cl(wireReq)),
			uw("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"),
			hr("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"),
			uw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)),
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)),
		},
	}, {
		name: "Expect: 100-continue answered 100 by the backend",
		steps: []wireStep{
			hw(post + "Host: {H}\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(wireReq)) + "\r\n\r\n"),
			ur(post + "Host: {U}\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(wireReq)) + "\r\n\r\n"),
			uw("HTTP/1.1 100 Continue\r\n\r\n"),
			hr("HTTP/1.1 100 Continue\r\n\r\n"),
			hw(wireReq), ur(wireReq),
			uw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)),
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)),
		},
		audit: []string{wireReq, wireResp},
	}, {
		name: "Expect: 100-continue answered 417 by the backend, not by the tap",
		steps: []wireStep{
			hw(post + "Host: {H}\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n"),
			ur(post + "Host: {U}\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n"),
			uw("HTTP/1.1 417 Expectation Failed\r\nContent-Length: 4\r\n\r\nnope"),
			// The body was never sent, so the connection cannot carry
			// another request: the tap closes it after the answer.
			hr("HTTP/1.1 417 Expectation Failed\r\nContent-Length: 4\r\n\r\nnope"), hEOF,
		},
	}, {
		name: "pipelined requests, answered in order",
		steps: []wireStep{
			hw(post + "Host: {H}\r\n" + cl(wireReq) + "GET /second HTTP/1.1\r\nHost: {H}\r\n\r\n" + post + "Host: {H}\r\n" + cl("{}")),
			ur(post + "Host: {U}\r\n" + cl(wireReq)),
			uw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)),
			ur("GET /second HTTP/1.1\r\nHost: {U}\r\n\r\n"),
			uw("HTTP/1.1 404 Not Found\r\n" + cl("no")),
			ur(post + "Host: {U}\r\n" + cl("{}")),
			uw("HTTP/1.1 200 OK\r\n" + cl("[]")),
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp) + "HTTP/1.1 404 Not Found\r\n" + cl("no") + "HTTP/1.1 200 OK\r\n" + cl("[]")),
		},
	}, {
		name: "hop-by-hop fields stop at the tap, which manages each connection itself",
		steps: []wireStep{
			hw(post + "Host: {H}\r\nConnection: keep-alive, Upgrade, HTTP2-Settings, X-Hop\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n" +
				"X-Hop: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\nProxy-Connection: keep-alive\r\nX-Kept: yes\r\n" + cl(wireReq)),
			ur(post + "Host: {U}\r\nX-Kept: yes\r\n" + cl(wireReq)),
			// The upstream closes its connection: the harness's stays open.
			uw("HTTP/1.1 200 OK\r\nConnection: close, X-Up-Hop\r\nX-Up-Hop: 1\r\nKeep-Alive: timeout=1\r\nContent-Type: application/json\r\n" + cl(wireResp)), uClose,
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)),
			hw(post + "Host: {H}\r\n" + cl("{}")),
			uAccept, ur(post + "Host: {U}\r\n" + cl("{}")),
			uw("HTTP/1.1 200 OK\r\n" + cl("[]")),
			hr("HTTP/1.1 200 OK\r\n" + cl("[]")),
			// Connection: close from the harness closes the harness's
			// connection after the answer; the upstream never sees it.
			hw(post + "Host: {H}\r\nConnection: close\r\n" + cl("{}")),
			ur(post + "Host: {U}\r\n" + cl("{}")),
			uw("HTTP/1.1 200 OK\r\n" + cl("[]")),
			hr("HTTP/1.1 200 OK\r\n" + cl("[]")), hEOF,
		},
	}, {
		name:   "an --upstream path prefixes the target; its query goes first",
		upPath: "/base?k=1",
		steps: []wireStep{
			hw("POST /agent-hooks?q=2 HTTP/1.1\r\nHost: {H}\r\n" + cl(wireReq)),
			ur("POST /base/agent-hooks?k=1&q=2 HTTP/1.1\r\nHost: {U}\r\n" + cl(wireReq)),
			uw("HTTP/1.1 200 OK\r\n" + cl(wireResp)),
			hr("HTTP/1.1 200 OK\r\n" + cl(wireResp)),
		},
	}, {
		name: "a harness that half-closes still gets the answer",
		steps: []wireStep{
			hw(post + "Host: {H}\r\nContent-Type: application/json\r\n" + cl(wireReq)), hShutWrite,
			ur(post + "Host: {U}\r\nContent-Type: application/json\r\n" + cl(wireReq)),
			uw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)),
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)), hEOF,
		},
	}, {
		name: "bytes the upstream flushed reach the harness before the rest",
		steps: []wireStep{
			hw(post + "Host: {H}\r\n" + cl(wireReq)),
			ur(post + "Host: {U}\r\n" + cl(wireReq)),
			uw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"jso\r\n"),
			hr("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"jso\r\n"),
			uw("3\r\nn\":\r\n"),
			hr("3\r\nn\":\r\n"),
			uw("0\r\n\r\n"),
			hr("0\r\n\r\n"),
		},
	}}
}

func TestWireFidelity(t *testing.T) {
	t.Parallel() // each case its own upstream and tap: they overlap (the trickled ones mostly wait)
	for _, mode := range []struct{ tls, trickle bool }{{false, false}, {true, false}, {false, true}} {
		for _, tc := range wireCases() {
			t.Run(fmt.Sprintf("tls=%v,trickle=%v/%s", mode.tls, mode.trickle, tc.name), func(t *testing.T) {
				t.Parallel()
				runWire(t, tc, mode.tls, mode.trickle)
			})
		}
	}
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestUpstreamIsTheTapItself(t *testing.T) {
	// Find a free port, then point the tap's upstream at the port it
	// listens on.
	ln := listenLoopback(t)
	addr := ln.Addr().String()
	ln.Close()
	tt := startTapAt(t, Config{Upstream: mustURL(t, "http://"+addr)}, addr)
	resp, body := post(t, client(), tt.url+"/agent-hooks", []byte(interceptBody), jsonHeader())
	if resp.StatusCode != http.StatusLoopDetected || !strings.Contains(string(body), "itself") {
		t.Errorf("got %d %q, want 508 naming the loop", resp.StatusCode, body)
	}
}

func TestForwardLoopAndProxyAuthorization(t *testing.T) {
	var gotProxyAuth []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		gotProxyAuth = r.Header.Values("Proxy-Authorization")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft"}}`)
	}))
	defer up.Close()
	tt := startTap(t, Config{Forward: true})
	c := client()
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(mustURL(t, tt.url))
	hdr := jsonHeader()
	hdr.Set("Proxy-Authorization", "Basic Zm9vOmJhcg==")
	hdr.Set("Connection", "X-Hop")
	hdr.Set("X-Hop", "1")
	resp, _ := post(t, c, up.URL+"/agent-hooks", []byte(interceptBody), hdr)
	if resp.StatusCode != 200 || len(gotProxyAuth) != 0 {
		t.Errorf("got %d with Proxy-Authorization %q at the origin, want 200 and none", resp.StatusCode, gotProxyAuth)
	}
	// The forward target is the tap itself.
	resp, body := post(t, c, tt.url+"/agent-hooks", []byte(interceptBody), jsonHeader())
	if resp.StatusCode != http.StatusLoopDetected {
		t.Errorf("a request through the tap to the tap: got %d %q, want 508", resp.StatusCode, body)
	}
}

func TestRetryWhenTheUpstreamClosedAnIdleConnection(t *testing.T) {
	up := newRawUpstream(t, false)
	tt := startTap(t, Config{Upstream: mustURL(t, up.url())})
	req := "POST /agent-hooks HTTP/1.1\r\nHost: " + strings.TrimPrefix(tt.url, "http://") + "\r\n" + cl(wireReq)
	upReq := "POST /agent-hooks HTTP/1.1\r\nHost: " + up.host + "\r\n" + cl(wireReq)
	resp := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cl(wireResp)
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			// First connection: one answer, then, when the next request
			// arrives, close without reading it (what an upstream closing
			// idle connections does when the request crosses its close).
			c, err := up.ln.Accept()
			if err != nil {
				return err
			}
			buf := make([]byte, len(upReq))
			if _, err := io.ReadFull(c, buf); err != nil {
				return err
			}
			c.Write([]byte(resp))
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err != nil {
				return err
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			// Second connection: the retried request.
			c, err = up.ln.Accept()
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != upReq {
				return fmt.Errorf("retried request %q (err %v)", buf, err)
			}
			_, err = c.Write([]byte(resp))
			return err
		}()
	}()
	h, err := net.Dial("tcp", strings.TrimPrefix(tt.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for i := range 2 {
		h.Write([]byte(req))
		readExact(t, fmt.Sprintf("harness, request %d", i+1), h, resp)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	tt.stop()
	if fs := tt.found.withCheck("HTTP-2"); len(fs) != 0 {
		t.Errorf("HTTP-2 findings for a retried request:%s", tt.found.dump())
	}
}

func TestH2CUpgradeToAnHTTP2Upstream(t *testing.T) {
	// curl --http2 and Java's HttpClient offer h2c on every request; an
	// HTTPS upstream that speaks HTTP/2 must answer it as a direct
	// connection would (issue 8 item 2).
	s := httptest.NewUnstartedServer(okBackend())
	s.EnableHTTP2 = true
	s.StartTLS()
	defer s.Close()
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	tt := startTap(t, Config{Upstream: mustURL(t, s.URL), RootCAs: pool})
	hdr := jsonHeader()
	hdr.Set("Connection", "Upgrade, HTTP2-Settings")
	hdr.Set("Upgrade", "h2c")
	hdr.Set("HTTP2-Settings", "AAMAAABkAAQCAAAAAAIAAAAA")
	resp, body := post(t, client(), tt.url+"/agent-hooks", []byte(interceptBody), hdr)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"result"`) {
		t.Errorf("got %d %q, want the upstream's 200", resp.StatusCode, body)
	}
}

func TestDeclinedRequestsUseNetHTTP(t *testing.T) {
	// HTTP/1.0 and absolute-form targets are not the relay's: they are
	// served by the net/http path, with its hop-by-hop handling.
	var got http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, wireResp)
	}))
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL)})
	h, err := net.Dial("tcp", strings.TrimPrefix(tt.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Write([]byte("POST /agent-hooks HTTP/1.0\r\nHost: x\r\nConnection: X-Hop\r\nX-Hop: 1\r\nX-Kept: 1\r\n" + cl(wireReq)))
	h.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(h)
	if !bytes.HasPrefix(b, []byte("HTTP/1.0 200 OK\r\n")) || !bytes.HasSuffix(b, []byte(wireResp)) {
		t.Errorf("HTTP/1.0 request: got %q", b)
	}
	if got.Get("X-Kept") != "1" || got.Get("X-Hop") != "" {
		t.Errorf("upstream header %v, want X-Kept and no X-Hop", got)
	}
	resp, _ := post(t, client(), tt.url+"/agent-hooks", []byte(interceptBody), jsonHeader())
	if resp.StatusCode != 200 {
		t.Errorf("a relayed request after a declined one: %d", resp.StatusCode)
	}
	// A head larger than the relay takes goes to net/http too.
	big := jsonHeader()
	big.Set("X-Big", strings.Repeat("b", maxRequestHead))
	if resp, body := post(t, client(), tt.url+"/agent-hooks", []byte(interceptBody), big); resp.StatusCode != 200 ||
		got.Get("X-Big") != big.Get("X-Big") || string(body) != wireResp {
		t.Errorf("a %d-byte head: got %d %q", maxRequestHead, resp.StatusCode, body)
	}
	// A CONNECT is still refused: reverse mode is not an open proxy.
	h2, _ := net.Dial("tcp", strings.TrimPrefix(tt.url, "http://"))
	defer h2.Close()
	h2.Write([]byte("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"))
	h2.SetReadDeadline(time.Now().Add(5 * time.Second))
	line := make([]byte, 12)
	io.ReadFull(h2, line)
	if string(line) != "HTTP/1.1 400" {
		t.Errorf("CONNECT in reverse mode: %q, want 400", line)
	}
}

func TestMalformedResponsesAre502(t *testing.T) {
	for _, resp := range []string{
		"HTTP/1.1 200 OK\r\nNo-Colon-Here\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
		"HTTP/9.9 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", maxResponseHead) + "\r\n\r\n",
	} {
		t.Run(resp[:min(len(resp), 30)], func(t *testing.T) {
			up := newRawUpstream(t, false)
			tt := startTap(t, Config{Upstream: mustURL(t, up.url())})
			go func() {
				c, err := up.ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				c.Read(make([]byte, 4096))
				c.Write([]byte(resp))
				c.Read(make([]byte, 1)) // until the tap closes
			}()
			r, body := post(t, client(), tt.url+"/agent-hooks", []byte(interceptBody), jsonHeader())
			if r.StatusCode != 502 || !strings.Contains(string(body), "will not forward") {
				t.Errorf("got %d %q, want 502 naming the malformed response", r.StatusCode, body)
			}
			tt.stop()
			if fs := tt.found.withCheck("HTTP-2"); len(fs) != 1 {
				t.Errorf("want one HTTP-2 operational failure:%s", tt.found.dump())
			}
		})
	}
}

func TestHarnessBreaksOffItsRequest(t *testing.T) {
	up := newRawUpstream(t, false)
	tt := startTap(t, Config{Upstream: mustURL(t, up.url())})
	h, err := net.Dial("tcp", strings.TrimPrefix(tt.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// The harness sends part of its body, then goes away.
	h.Write([]byte("POST /agent-hooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n" + wireReq))
	c, err := up.ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Read(make([]byte, 64))
	h.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Errorf("the tap kept the upstream connection open: %v", err)
	}
	tt.stop()
	// Not an upstream failure; the partial request is reported unchecked.
	if fs := tt.found.withCheck("HTTP-2"); len(fs) != 0 {
		t.Errorf("HTTP-2 findings for a harness that went away:%s", tt.found.dump())
	}
	if fs := tt.found.withCheck("TAP-1"); len(fs) != 1 {
		t.Errorf("want one TAP-1 for the partial request:%s", tt.found.dump())
	}
}

func TestUpstreamTimeoutStartsAfterTheBody(t *testing.T) {
	// --upstream-timeout bounds the wait for an answer, not the harness's
	// upload: a body that trickles in for longer is not a 504.
	up := httptest.NewServer(okBackend())
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL), UpstreamTimeout: 100 * time.Millisecond})
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"pad":"`))
		for range 6 {
			time.Sleep(50 * time.Millisecond)
			pw.Write(bytes.Repeat([]byte("x"), 8<<10))
		}
		pw.Write([]byte(`"}}`))
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", tt.url+"/agent-hooks", pr)
	req.Header = jsonHeader()
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status = %d, want 200", resp.StatusCode)
	}
}

// TestWireFidelityRandom relays seeded random messages: random field names
// in random case, random values (obs-text included), random whitespace
// after the colon, random bodies framed by Content-Length or by chunks
// with random extensions and trailers, written in random pieces; 40
// exchanges on one connection per seed, with HEAD, 204, 304, 1xx,
// Expect: 100-continue and pipelined pairs among them.
func TestWireFidelityRandom(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 16))
		tc := wireCase{name: fmt.Sprint(seed), split: rand.New(rand.NewPCG(seed, 17))}
		type exchange struct{ hreq, ureq, resp string }
		gen := func() exchange {
			method := []string{"POST", "GET", "PUT", "PATCH", "DELETE", "X-Custom", "HEAD"}[r.IntN(7)]
			target := "/" + randString(r, "abcXYZ019-._~%/", r.IntN(30))
			if r.IntN(2) == 0 {
				target += "?" + randString(r, "abcXYZ019-._~%=&", r.IntN(30))
			}
			fields, body := randFields(r), randBody(r)
			pos := r.IntN(len(fields) + 1)
			line := method + " " + target + " HTTP/1.1\r\n"
			x := exchange{
				hreq: line + strings.Join(fields[:pos], "") + "Host: {H}\r\n" + strings.Join(fields[pos:], "") + body,
				ureq: line + strings.Join(fields[:pos], "") + "Host: {U}\r\n" + strings.Join(fields[pos:], "") + body,
			}
			if r.IntN(8) == 0 {
				x.resp = "HTTP/1.1 103 Early Hints\r\n" + strings.Join(randFields(r), "") + "\r\n"
			}
			switch status := []string{"200 OK", "201 Created", "299 Odd", "400 Bad Request", "404 Not Found", "500 Oops",
				"204 No Content", "304 Not Modified"}[r.IntN(8)]; {
			case method == "HEAD" || status[0] == '3' || status[0] == '2' && status[1] == '0' && status[2] == '4':
				// No body whatever the framing fields say.
				x.resp += "HTTP/1.1 " + status + "\r\n" + strings.Join(randFields(r), "") +
					[]string{"Content-Length: 1234\r\n", "Transfer-Encoding: chunked\r\n", ""}[r.IntN(3)] + "\r\n"
			default:
				x.resp += "HTTP/1.1 " + status + "\r\n" + strings.Join(randFields(r), "") + randBody(r)
			}
			return x
		}
		for range 40 {
			switch x := gen(); r.IntN(6) {
			case 0: // two requests pipelined in one go
				y := gen()
				tc.steps = append(tc.steps, hw(x.hreq+y.hreq), ur(x.ureq), uw(x.resp), ur(y.ureq), uw(y.resp), hr(x.resp+y.resp))
			case 1: // Expect: 100-continue, answered 100 by the backend
				hd, bd, _ := strings.Cut(x.hreq, "\r\n\r\n")
				ud, _, _ := strings.Cut(x.ureq, "\r\n\r\n")
				tc.steps = append(tc.steps, hw(hd+"\r\nExpect: 100-continue\r\n\r\n"), ur(ud+"\r\nExpect: 100-continue\r\n\r\n"),
					uw("HTTP/1.1 100 Continue\r\n\r\n"), hr("HTTP/1.1 100 Continue\r\n\r\n"), hw(bd), ur(bd), uw(x.resp), hr(x.resp))
			default:
				tc.steps = append(tc.steps, hw(x.hreq), ur(x.ureq), uw(x.resp), hr(x.resp))
			}
		}
		useTLS := seed%4 == 3 // every fourth seed over TLS
		t.Run(fmt.Sprintf("%s,tls=%v", tc.name, useTLS), func(t *testing.T) { runWire(t, tc, useTLS, false) })
	}
}

func randString(r *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

const tokenChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~"

// randFields returns random end-to-end field lines, each with its CRLF.
func randFields(r *rand.Rand) []string {
	var out []string
	for range r.IntN(8) {
		name := "X-" + randString(r, tokenChars, 1+r.IntN(15))
		var v []byte
		for range r.IntN(40) {
			switch c := r.IntN(100); {
			case c < 5:
				v = append(v, byte(0x80+r.IntN(0x80))) // obs-text
			case c < 10:
				v = append(v, ' ')
			case c < 12:
				v = append(v, '\t')
			default:
				v = append(v, byte(0x21+r.IntN(0x7e-0x21))) // visible ASCII
			}
		}
		v = bytes.ReplaceAll(v, []byte("{"), []byte("("))
		out = append(out, name+":"+[]string{"", " ", "  ", "\t"}[r.IntN(4)]+string(v)+"\r\n")
		if r.IntN(4) == 0 { // the same name again, in other case
			out = append(out, strings.ToUpper(name)+": again\r\n")
		}
	}
	return out
}

// randBody returns the framing fields, the empty line and a random body.
func randBody(r *rand.Rand) string {
	data := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	if r.IntN(2) == 0 {
		return cl(data(r.IntN(3000)))
	}
	var b strings.Builder
	b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	for range r.IntN(5) {
		n := 1 + r.IntN(2000)
		size := fmt.Sprintf("%x", n)
		if r.IntN(2) == 0 {
			size = strings.ToUpper(size)
		}
		if r.IntN(3) == 0 {
			size = "00" + size
		}
		b.WriteString(size)
		if r.IntN(3) == 0 {
			b.WriteString(";" + randString(r, tokenChars, 1+r.IntN(8)) + "=" + randString(r, tokenChars, r.IntN(8)))
		}
		b.WriteString("\r\n" + data(n) + "\r\n")
	}
	b.WriteString("0\r\n")
	for range r.IntN(3) {
		b.WriteString("X-T" + randString(r, tokenChars, 1+r.IntN(8)) + ": " + randString(r, tokenChars, r.IntN(20)) + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}
