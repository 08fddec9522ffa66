package main

import (
	"context"
	"flag"
	"io"
	"os/signal"
	"syscall"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/conduct/live"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/stdiotap"
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

// runAuditProcess is the audit process of a stdio tap: `ahp-tap
// __audit-process --audit-conn CONN --audit-fd FD STDIO-FLAGS...`
// (stdiotap.RunAuditProcess).
func (m *Main) runAuditProcess(_ context.Context, args []string) error {
	stdiotap.IgnoreSignals() // before anything: the signals are the forwarding process's
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	var sf stdioFlags
	sf.register(fs, m.Stderr)
	conn := fs.String("audit-conn", "", "the link's name")
	fd := fs.Int("audit-fd", auditlink.LinkFD, "the audit link's file descriptor")
	readyFD := fs.Int("ready-fd", -1, "a file descriptor to write to once the link is being read")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { sf.queueSet = sf.queueSet || f.Name == "audit-queue" })
	prio, _ := stdio.ParsePriority(sf.priority)
	return stdiotap.RunAuditProcess(sf.config(m, prio), *conn, *fd, *readyFD)
}

// runAuditServer is the shared audit process of per_event stdio taps:
// `ahp-tap __audit-server --audit-key KEY --socket PATH --lock PATH
// --ready-fd FD STDIO-FLAGS...` (stdiotap.RunAuditServer).
func (m *Main) runAuditServer(_ context.Context, args []string) error {
	stdiotap.IgnoreSignals()
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	var sf stdioFlags
	sf.register(fs, io.Discard)
	key := fs.String("audit-key", "", "KEY")
	sock := fs.String("socket", "", "the socket's path")
	lock := fs.String("lock", "", "the lock's path")
	readyFD := fs.Int("ready-fd", -1, "a file descriptor to write to once the socket listens")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	prio, _ := stdio.ParsePriority(sf.priority)
	return stdiotap.RunAuditServer(sf.config(m, prio), *key, *sock, *lock, *readyFD)
}
