package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/conduct"
	"github.com/ahp-tap/ahp-tap/conduct/live"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// conductServerCommand is the hidden subcommand that holds the live
// conduct timeline of the taps sharing a --conduct directory.
const conductServerCommand = "__conduct-server"

// Live conduct defaults: how long the server waits for the facts of links
// that lag (each link's audit runs in a process of its own) before the
// timeline takes a fact, and how long it stays up with no link.
const (
	conductWindow = time.Second
	conductIdle   = 30 * time.Second
)

// conductIdleEnv overrides conductIdle (tests end the server sooner).
const conductIdleEnv = "AHP_TAP_CONDUCT_IDLE"

// conductClient is the live conduct client of a tap with --conduct (nil
// without): its session's judged frames go to the registration's server.
func (sf *stdioFlags) conductClient(l *loaded, diag io.Writer) *live.Client {
	return conductClientFor(sf.conduct, sf.registration, sf.hook, l, diag)
}

// conductClientFor is the live conduct client of a tap of hook with
// --conduct dir (nil when dir is "").
func conductClientFor(dir, reg, hook string, l *loaded, diag io.Writer) *live.Client {
	if dir == "" || l.Config.Registration == nil {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(diag, "ahp-tap: conduct: %v; this link's conduct is not judged live\n", err)
		return nil
	}
	if abs, err := filepath.Abs(reg); err == nil {
		reg = abs
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return live.NewClient(live.ClientConfig{Dir: dir, Key: l.Config.Registration.Digest(), Hook: hook, Diag: diag,
		Argv: []string{exe, conductServerCommand, "--dir", dir, "--registration", reg}})
}

// runConductServer is `ahp-tap __conduct-server --dir DIR --registration
// FILE`: the registration's live conduct timeline; its findings go to
// DIR/conduct.violations.log.
func (m *Main) runConductServer(_ context.Context, args []string) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT)
	fs := flag.NewFlagSet(conductServerCommand, flag.ContinueOnError)
	dir := fs.String("dir", "", "the conduct directory")
	regPath := fs.String("registration", "", "the registration")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if *regPath == "" || *dir == "" {
		return usageError("%s: --dir and --registration are required", conductServerCommand)
	}
	data, err := os.ReadFile(*regPath)
	if err != nil {
		return err
	}
	reg, _, err := tap.ParseJSON(data)
	if err != nil {
		return fmt.Errorf("%s: %v", *regPath, err)
	}
	idle := conductIdle
	if d, err := time.ParseDuration(os.Getenv(conductIdleEnv)); err == nil && d > 0 {
		idle = d
	}
	p := live.PathsFor(*dir)
	lg, err := report.OpenLog(p.Log, m.Stderr)
	if err != nil {
		return err
	}
	// The hooks tapped with --conduct: as `wrap --conduct` listed them,
	// else every stdio backend of the registration (an HTTP backend is
	// then not, and the events it intercepts are not judged live).
	tapped, err := live.ReadTapped(p.Tapped)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ahp-tap: conduct server: %v; every stdio backend is taken as tapped\n", err)
	}
	if tapped == nil {
		for _, h := range reg.Get("hooks").Elems() {
			if t, _ := h.Path("transport", "type").Text(); t == "stdio" {
				id, _ := h.Get("id").Text()
				tapped = append(tapped, id)
			}
		}
	}
	tl := conduct.New(conduct.Config{Registration: reg, Tapped: tapped, Sink: lg,
		Excerpt: live.Restarted(p.Started)})
	srv := &live.Server{Dir: *dir, Key: reg.Digest(), Timeline: tl, Window: conductWindow, Idle: idle, Log: m.Stderr}
	ready := os.NewFile(3, "conduct-ready")
	err = srv.Serve(ready)
	for _, nc := range tl.NotChecked() {
		fmt.Fprintf(m.Stderr, "ahp-tap: conduct server: not checked: %s (%s)\n", nc.Check, nc.Reason)
	}
	if cerr := lg.CloseWithin(5 * time.Second); err == nil {
		err = cerr
	}
	return err
}

var _ tap.Watcher = (*live.Client)(nil)
