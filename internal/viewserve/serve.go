// Package viewserve serves ahp-tap's HTML report over HTTP for a browser
// on the same machine (`ahp-tap view --listen`): loopback only unless the
// caller allows otherwise, one page, no other path, no caching, and the
// report's own Content-Security-Policy (no network, inline script only).
package viewserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// Listen listens on addr (host:port). An address that is not loopback is
// refused unless allowRemote: whoever reaches the page reads the traffic
// it shows.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if !allowRemote && !IsLoopback(ln.Addr()) {
		ln.Close()
		return nil, fmt.Errorf("%s is not a loopback address: the page shows the recorded traffic to everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", addr)
	}
	return ln, nil
}

// IsLoopback reports whether a listener's address is on loopback only (an
// unspecified address, 0.0.0.0 or ::, is every interface).
func IsLoopback(a net.Addr) bool {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CSP is the report's Content-Security-Policy, sent as a header too.
const CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; connect-src 'self'"

// Page serves the file at path as the page at "/" (GET and HEAD only).
// Unless allowRemote, a request whose Host is not a loopback name is
// refused (a web page elsewhere must not reach it by DNS rebinding).
func Page(path string, allowRemote bool) http.Handler {
	return guard(allowRemote, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && r.URL.Path != "/index.html" {
			http.NotFound(w, r)
			return
		}
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, "the report is gone", http.StatusGone)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.ServeContent(w, r, "", time.Time{}, f)
	}))
}

// guard sets the headers every response carries and refuses methods other
// than GET and HEAD, and Hosts that are not loopback names.
func guard(allowRemote bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		if !allowRemote && !LoopbackHost(r.Host) {
			http.Error(w, "this page is served to loopback names only (localhost, 127.0.0.1, [::1])", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHost reports whether a Host header names the local machine:
// localhost or a loopback IP, with or without a port.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Server returns an http.Server for h with bounded header and idle times.
func Server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second}
}

// ServeFile serves the page at path on ln (see Page) until ctx ends, then
// shuts the server down within two seconds. Its error is one the server
// met while serving.
func ServeFile(ctx context.Context, ln net.Listener, path string, allowRemote bool) error {
	srv := Server(Page(path, allowRemote))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	return nil
}
