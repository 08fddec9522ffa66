package main

import (
	"context"
	"flag"
	"os/signal"
	"syscall"

	"github.com/ahp-tap/ahp-tap/conduct/live"
)

// The hidden subcommands: processes ahp-tap starts of itself, not for
// people. Each reads its flags here and runs in its package.

// runConductServer is `ahp-tap __conduct-server --dir DIR --registration
// FILE`: the registration's live conduct timeline (live.RunServer).
func (m *Main) runConductServer(_ context.Context, args []string) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT)
	fs := flag.NewFlagSet(live.ServerCommand, flag.ContinueOnError)
	dir := fs.String("dir", "", "the conduct directory")
	regPath := fs.String("registration", "", "the registration")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if *regPath == "" || *dir == "" {
		return usageError("%s: --dir and --registration are required", live.ServerCommand)
	}
	return live.RunServer(*dir, *regPath, m.Stderr)
}
