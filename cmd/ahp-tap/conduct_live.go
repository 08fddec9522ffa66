package main

import (
	"context"
	"encoding/json"
	"errors"
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
	if dir == "" || l.cfg.Registration == nil {
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
	return live.NewClient(live.ClientConfig{Dir: dir, Key: l.cfg.Registration.Digest(), Hook: hook, Diag: diag,
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
	tapped, err := readTapped(p.Tapped)
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
		Excerpt: restarted(p.Started)})
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

// readTapped reads the hooks `wrap --conduct` tapped (nil: no list).
func readTapped(path string) ([]string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var hooks []string
	if err := json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&hooks); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return hooks, nil
}

// writeTapped writes the list of hooks tapped with --conduct, for the
// conduct server (mode 0600, never through a link).
func writeTapped(path string, hooks []string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(hooks)
	_, err = f.Write(append(data, '\n'))
	return errors.Join(err, f.Close())
}

// restarted reports whether a conduct server of this directory started
// within the last ten minutes (a server that idled out and was started
// again, mid-session: its timeline may have missed the start), and marks
// this start.
func restarted(marker string) bool {
	st, err := os.Stat(marker)
	recent := err == nil && time.Since(st.ModTime()) < 10*time.Minute
	if f, err := os.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600); err == nil {
		f.Close()
	}
	now := time.Now()
	_ = os.Chtimes(marker, now, now)
	return recent
}

var _ tap.Watcher = (*live.Client)(nil)
