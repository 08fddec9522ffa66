package metrics

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// Listen listens on --metrics addr for the command name (nil without
// one). Off loopback it is refused unless allowRemote (issue 8 item 10:
// anyone who can reach it reads the tap's traffic counts), and then warned
// about on diag. Its errors are usage errors (exit 2) of the command.
func Listen(name, addr string, allowRemote bool, diag io.Writer) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: --metrics: %v", name, err)
	}
	if !isLoopback(ln.Addr()) {
		if !allowRemote {
			ln.Close()
			return nil, remoteError(name, ln.Addr().String())
		}
		fmt.Fprintf(diag, "ahp-tap %s: WARNING: --allow-remote: the metrics on %s are open to everyone who can reach that address\n", name, ln.Addr())
	}
	return ln, nil
}

func remoteError(name, addr string) error {
	return fmt.Errorf("%s: --metrics on %s (not loopback) would show the tap's traffic counts to everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", name, addr)
}

// isLoopback reports whether a listener's address is on loopback only (an
// unspecified address, 0.0.0.0 or ::, is every interface).
func isLoopback(a net.Addr) bool {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckAddr is the stdio forwarding process's check of --metrics addr:
// the audit process listens on it (so that serving never costs
// forwarding), this process refuses a bad or non-loopback address with
// exit 2 before the backend starts. A host name must resolve to loopback
// addresses only; an empty host is every interface.
func CheckAddr(addr string, allowRemote bool, diag io.Writer) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("stdio: --metrics: %v", err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("stdio: --metrics: %v", err)
	}
	loopback := host != ""
	if host != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil || len(ips) == 0 {
			return fmt.Errorf("stdio: --metrics: cannot resolve %q: %v", host, err)
		}
		for _, ip := range ips {
			loopback = loopback && ip.IP.IsLoopback()
		}
	}
	if !loopback {
		if !allowRemote {
			return remoteError("stdio", addr)
		}
		printable.Fprintf(diag, "ahp-tap stdio: WARNING: --allow-remote: the metrics on %s are open to everyone who can reach that address\n", addr)
	}
	return nil
}

// CheckIDs lists every check ID of the default rules, once each, with
// TAP-1 and TAP-2: the findings series a tap zeroes at start.
func CheckIDs() []string {
	var ids []string
	for _, r := range rules.Default(rules.Options{}) {
		if c := string(r.Info().Check); !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	for _, c := range []string{string(vocab.Tap1), string(vocab.Tap2)} {
		if !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	return ids
}
