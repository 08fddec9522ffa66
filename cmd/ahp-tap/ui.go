package main

import (
	"bytes"
	"io"
	"net"
	"net/http"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/viewserve"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
)

// A liveUI is a tap's --ui: the hub fed through output.Config.View and
// the server of its page. A nil *liveUI is no --ui.
type liveUI struct {
	name string
	hub  *viewserve.Hub
	ln   net.Listener
	srv  *http.Server
	page []byte
	diag io.Writer
}

// openUI listens on --ui ADDR (loopback only unless allowRemote; exit 2
// otherwise) and builds the hub and the page; nil without --ui.
func openUI(name, addr string, allowRemote bool, snapshot string, diag io.Writer) (*liveUI, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := viewserve.Listen(addr, allowRemote)
	if err != nil {
		return nil, usageError("%s: --ui: %v", name, err)
	}
	var page bytes.Buffer
	if err := report.LivePage(&page, report.Header{Tool: "ahp-tap", Version: version, Snapshot: snapshot, Catalogue: rules.Catalogue}, "ahp-tap "+name+" · live"); err != nil {
		ln.Close()
		return nil, usageError("%s: --ui: %v", name, err)
	}
	if !viewserve.IsLoopback(ln.Addr()) {
		printable.Fprintf(diag, "ahp-tap %s: WARNING: --allow-remote: the live view on %s shows the traffic to everyone who can reach that address\n", name, ln.Addr())
	}
	return &liveUI{name: name, hub: viewserve.NewHub(name, 0), ln: ln, page: page.Bytes(), diag: diag}, nil
}

// view is the output.View to give output.Config (nil without --ui).
func (u *liveUI) view() output.View {
	if u == nil {
		return nil
	}
	return u.hub
}

// serve starts serving the page and its events.
func (u *liveUI) serve() {
	if u == nil {
		return
	}
	u.srv = viewserve.Server(u.hub.Handler(u.page, !viewserve.IsLoopback(u.ln.Addr())))
	go func() { _ = u.srv.Serve(u.ln) }()
	printable.Fprintf(u.diag, "ahp-tap %s: live view on http://%s/\n", u.name, u.ln.Addr())
}

// close ends the viewers' streams and the server, at once.
func (u *liveUI) close() {
	if u == nil {
		return
	}
	u.hub.Close()
	if u.srv != nil {
		_ = u.srv.Close()
	}
	u.ln.Close()
}

// checkUIAddr is the forwarding process's check of --ui ADDR (the audit
// process listens on it): a bad address, or one that is not loopback
// without allowRemote, is exit 2 before anything starts. A host name
// other than localhost is taken as not loopback.
func checkUIAddr(name, addr string, allowRemote bool) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError("%s: --ui: %v", name, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usageError("%s: --ui: %v", name, err)
	}
	if !allowRemote && (host == "" || !viewserve.LoopbackHost(host)) {
		return usageError("%s: --ui: %s is not a loopback address: the page shows the traffic to everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", name, addr)
	}
	return nil
}

// stdioUI returns the live view of this audit side, serving it on --ui
// the first time: one view for every link the process audits (the shared
// audit process of per_event taps serves all of them). A listen that
// fails is said once on diag, and the audit goes on without it; traffic
// is never affected.
func (sf *stdioFlags) stdioUI(diag io.Writer) *liveUI {
	if sf.uiAddr == "" || sf.uiTried {
		return sf.ui
	}
	sf.uiTried = true
	u, err := openUI("stdio", sf.uiAddr, sf.allowRemote, sf.snapshot, io.Discard) // the forwarding process checked
	if err != nil {
		printable.Fprintf(diag, "ahp-tap: %v; the live view is not served, traffic is not affected\n", err)
		return nil
	}
	u.diag = diag
	u.serve()
	sf.ui = u
	return u
}
