package live

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ahp-tap/ahp-tap/conduct"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// ServerCommand is the hidden ahp-tap subcommand that holds the live
// conduct timeline of the taps sharing a --conduct directory: `ahp-tap
// __conduct-server --dir DIR --registration FILE` runs RunServer.
const ServerCommand = "__conduct-server"

// Live conduct defaults: how long the server waits for the facts of links
// that lag (each link's audit runs in a process of its own) before the
// timeline takes a fact, and how long it stays up with no link.
const (
	conductWindow = time.Second
	conductIdle   = 30 * time.Second
)

// IdleEnv overrides how long the server stays up with no link (tests end
// the server sooner).
const IdleEnv = "AHP_TAP_CONDUCT_IDLE"

// ClientFor is the live conduct client of a tap of hook with --conduct
// dir (nil when dir is "" or there is no registration): its session's
// judged frames go to the registration's server, which this binary
// starts (ServerCommand) when none answers. regPath is the registration's
// file, registration its document; clocked says the link's feeder tells
// the client its clock (ClientConfig.Clocked).
func ClientFor(dir, regPath, hook string, registration *tap.Value, clocked bool, diag io.Writer) *Client {
	if dir == "" || registration == nil {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(diag, "ahp-tap: conduct: %v; this link's conduct is not judged live\n", err)
		return nil
	}
	if abs, err := filepath.Abs(regPath); err == nil {
		regPath = abs
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return NewClient(ClientConfig{Dir: dir, Key: registration.Digest(), Hook: hook, Diag: diag, Clocked: clocked,
		Argv: []string{exe, ServerCommand, "--dir", dir, "--registration", regPath}})
}

// RunServer is the conduct server process once its flags are read: the
// registration's live conduct timeline, served on DIR until it is idle;
// its findings go to DIR/conduct.violations.log, its notices to stderr.
func RunServer(dir, regPath string, stderr io.Writer) error {
	data, err := os.ReadFile(regPath)
	if err != nil {
		return err
	}
	reg, _, err := tap.ParseJSON(data)
	if err != nil {
		return fmt.Errorf("%s: %v", regPath, err)
	}
	idle := conductIdle
	if d, err := time.ParseDuration(os.Getenv(IdleEnv)); err == nil && d > 0 {
		idle = d
	}
	p := PathsFor(dir)
	lg, err := report.OpenLog(p.Log, stderr)
	if err != nil {
		return err
	}
	// The hooks tapped with --conduct: as `wrap --conduct` listed them,
	// else every stdio backend of the registration (an HTTP backend is
	// then not, and the events it intercepts are not judged live).
	tapped, err := ReadTapped(p.Tapped)
	if err != nil {
		fmt.Fprintf(stderr, "ahp-tap: conduct server: %v; every stdio backend is taken as tapped\n", err)
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
		Excerpt: Restarted(p.Started)})
	srv := &Server{Dir: dir, Key: reg.Digest(), Timeline: tl, Window: conductWindow, Idle: idle, Log: stderr,
		// The findings and notices are written before the pid file goes:
		// whoever waits for it to go then reads them whole.
		Finish: func() error {
			for _, nc := range tl.NotChecked() {
				fmt.Fprintf(stderr, "ahp-tap: conduct server: not checked: %s (%s)\n", nc.Check, nc.Reason)
			}
			return lg.CloseWithin(5 * time.Second)
		}}
	return srv.Serve(os.NewFile(3, "conduct-ready"))
}

var _ tap.Watcher = (*Client)(nil)
