package viewserve

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/rules"
)

// A Live is a tap's --ui: the hub a tap feeds through output.Config.View
// and the server of its page. A nil *Live is no --ui.
type Live struct {
	name string
	hub  *Hub
	ln   net.Listener
	srv  *http.Server
	page []byte
	diag io.Writer
}

// OpenLive listens on --ui addr for the tap name (loopback only unless
// allowRemote; an error otherwise, a usage error for the command) and
// builds the hub and the page of version's protocol snapshot; nil
// without an address. diag gets the warning of a remote view and, once
// Serve runs, where it is served.
func OpenLive(name, addr string, allowRemote bool, version, snapshot string, diag io.Writer) (*Live, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := Listen(addr, allowRemote)
	if err != nil {
		return nil, fmt.Errorf("%s: --ui: %v", name, err)
	}
	var page bytes.Buffer
	if err := report.LivePage(&page, report.Header{Tool: "ahp-tap", Version: version, Snapshot: snapshot, Catalogue: rules.Catalogue}, "ahp-tap "+name+" · live"); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%s: --ui: %v", name, err)
	}
	if !IsLoopback(ln.Addr()) {
		printable.Fprintf(diag, "ahp-tap %s: WARNING: --allow-remote: the live view on %s shows the traffic to everyone who can reach that address\n", name, ln.Addr())
	}
	return &Live{name: name, hub: NewHub(name, 0), ln: ln, page: page.Bytes(), diag: diag}, nil
}

// View is the live view to give output.Config.View (nil without --ui).
func (u *Live) View() output.View {
	if u == nil {
		return nil
	}
	return u.hub
}

// SetDiag sets where Serve says where the view is served.
func (u *Live) SetDiag(diag io.Writer) {
	if u != nil {
		u.diag = diag
	}
}

// Serve starts serving the page and its events.
func (u *Live) Serve() {
	if u == nil {
		return
	}
	u.srv = Server(u.hub.Handler(u.page, !IsLoopback(u.ln.Addr())))
	go func() { _ = u.srv.Serve(u.ln) }()
	printable.Fprintf(u.diag, "ahp-tap %s: live view on http://%s/\n", u.name, u.ln.Addr())
}

// Close ends the viewers' streams and the server, at once.
func (u *Live) Close() {
	if u == nil {
		return
	}
	u.hub.Close()
	if u.srv != nil {
		_ = u.srv.Close()
	}
	u.ln.Close()
}

// CheckAddr is the forwarding process's check of --ui addr (the audit
// process listens on it): a bad address, or one that is not loopback
// without allowRemote, is an error (exit 2) before anything starts. A
// host name other than localhost is taken as not loopback.
func CheckAddr(name, addr string, allowRemote bool) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: --ui: %v", name, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("%s: --ui: %v", name, err)
	}
	if !allowRemote && (host == "" || !LoopbackHost(host)) {
		return fmt.Errorf("%s: --ui: %s is not a loopback address: the page shows the traffic to everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", name, addr)
	}
	return nil
}
