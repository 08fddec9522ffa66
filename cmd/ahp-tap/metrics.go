package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	tapmetrics "github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/otlpexport"
)

func init() { tapmetrics.BuildVersion = version }

// listenMetrics listens on --metrics ADDR for the command name (nil
// without one). Off loopback it is refused unless allowRemote (issue 8
// item 10: anyone who can reach it reads the tap's traffic counts), and
// then warned about on diag.
func listenMetrics(name, addr string, allowRemote bool, diag io.Writer) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageError("%s: --metrics: %v", name, err)
	}
	if !isLoopback(ln.Addr()) {
		if !allowRemote {
			ln.Close()
			return nil, remoteMetricsError(name, ln.Addr().String())
		}
		fmt.Fprintf(diag, "ahp-tap %s: WARNING: --allow-remote: the metrics on %s are open to everyone who can reach that address\n", name, ln.Addr())
	}
	return ln, nil
}

func remoteMetricsError(name, addr string) error {
	return usageError("%s: --metrics on %s (not loopback) would show the tap's traffic counts to everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", name, addr)
}

// checkMetricsAddr is the stdio forwarding process's check of --metrics
// ADDR: the audit process listens on it (so that serving never costs
// forwarding), this process refuses a bad or non-loopback address with
// exit 2 before the backend starts. A host name must resolve to loopback
// addresses only; an empty host is every interface.
func checkMetricsAddr(addr string, allowRemote bool, diag io.Writer) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError("stdio: --metrics: %v", err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usageError("stdio: --metrics: %v", err)
	}
	loopback := host != ""
	if host != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil || len(ips) == 0 {
			return usageError("stdio: --metrics: cannot resolve %q: %v", host, err)
		}
		for _, ip := range ips {
			loopback = loopback && ip.IP.IsLoopback()
		}
	}
	if !loopback {
		if !allowRemote {
			return remoteMetricsError("stdio", addr)
		}
		printable.Fprintf(diag, "ahp-tap stdio: WARNING: --allow-remote: the metrics on %s are open to everyone who can reach that address\n", addr)
	}
	return nil
}

// stdioMetrics returns the traffic metrics of this audit side, serving
// them on --metrics the first time: one endpoint for every link the
// process audits (the shared audit process of per_event taps serves all
// of them). A listen that fails is said once on diag, and the audit goes
// on without metrics; traffic is never affected.
func (sf *stdioFlags) stdioMetrics(diag io.Writer) *tapmetrics.Traffic {
	if sf.metricsTried {
		return sf.traffic
	}
	if sf.metricsAddr == "" {
		if otlpexport.Enabled(sf.otlp.endpoint) {
			// Counted for the OTLP collector only (pushed by each
			// link's exporter), not served.
			sf.metricsTried = true
			sf.traffic = tapmetrics.NewTraffic()
			sf.traffic.ZeroFindings(checkIDs())
		}
		return sf.traffic
	}
	sf.metricsTried = true
	ln, err := listenMetrics("stdio", sf.metricsAddr, sf.allowRemote, io.Discard) // the forwarding process warned
	if err != nil {
		printable.Fprintf(diag, "ahp-tap: %v; metrics are not served, traffic is not affected\n", err)
		return nil
	}
	t := tapmetrics.NewTraffic()
	t.ZeroFindings(checkIDs())
	srv := &http.Server{Handler: t.Mux(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	printable.Fprintf(diag, "ahp-tap stdio: metrics on http://%s/metrics\n", ln.Addr())
	sf.traffic = t
	return t
}
