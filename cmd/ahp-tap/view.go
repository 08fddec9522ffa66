package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/viewserve"
)

// runView opens recordings in the HTML report's conversation view: it
// replays the captures into one HTML report (as 'replay --report html='
// does), writes it to a 0600 file and prints its path; with --listen it
// also serves the page on loopback until interrupted. Findings are what
// the page shows, not a failure: exit 0 when the page was written, 2 on a
// usage error or an input that is not traffic.
func (m *Main) runView(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("view", flag.ContinueOnError)
	var ef engineFlags
	ef.register(fs)
	out := fs.String("out", "", "write the page to `FILE` (mode 0600, never through a symlink; default: a new ahp-tap-view-*.html in the temporary directory)")
	listen := fs.String("listen", "", "also serve the page at http://`ADDR`/ until interrupted (loopback only unless --allow-remote)")
	allowRemote := fs.Bool("allow-remote", false, "let --listen use an address other than loopback (anyone who can reach it reads the recorded traffic)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("view: no CAPTURE given (usage: ahp-tap view [flags] CAPTURE...)")
	}
	for _, in := range fs.Args() {
		if in == "-" {
			continue
		}
		if _, err := os.Stat(in); err != nil {
			return usageError("view: %v", err)
		}
	}
	var ln net.Listener
	if *listen != "" {
		l, err := viewserve.Listen(*listen, *allowRemote)
		if err != nil {
			return usageError("view: --listen: %v", err)
		}
		ln = l
		defer ln.Close()
		if !viewserve.IsLoopback(ln.Addr()) {
			printable.Fprintf(m.diag(), "ahp-tap view: WARNING: --allow-remote: the page on %s shows the recorded traffic to everyone who can reach that address\n", ln.Addr())
		}
	}
	path, created := *out, false
	if path == "" {
		f, err := os.CreateTemp("", "ahp-tap-view-*.html") // a new file, mode 0600
		if err != nil {
			return usageError("view: %v", err)
		}
		path, created = f.Name(), true
		f.Close()
	}
	// The replay's own flags: the report, and the engine flags given.
	rargs := []string{"--report", "html=" + path, "--quiet"}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "out", "listen", "allow-remote":
		default:
			rargs = append(rargs, "--"+f.Name+"="+f.Value.String())
		}
	})
	rargs = append(append(rargs, "--"), fs.Args()...)
	err := m.runReplay(ctx, rargs)
	var ee *exitError
	if errors.As(err, &ee) && ee.code == 1 && ee.msg == "" {
		err = nil // findings: the page shows them
	}
	if err != nil {
		if created {
			os.Remove(path)
		}
		return err
	}
	fmt.Fprintln(m.Stdout, path)
	if ln == nil {
		return nil
	}
	fmt.Fprintf(m.Stdout, "http://%s/\n", ln.Addr())
	printable.Fprintf(m.diag(), "ahp-tap view: serving %s on http://%s/ (Ctrl-C stops)\n", path, ln.Addr())
	if err := viewserve.ServeFile(ctx, ln, path, *allowRemote); err != nil {
		return &exitError{code: 2, msg: fmt.Sprintf("view: serving: %v", err)}
	}
	return nil
}
