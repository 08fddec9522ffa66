package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/stdio"
)

// The shared audit process (docs/stdio.md, "Process model"). A per_event
// backend is one ahp-tap per event; with --state DIR every one of them
// sends its audit link to one audit process (auditlink.Server), which
// serves each link as the audit process of that event would, so that the
// rules' start-up is paid once rather than per event. Its rendezvous is in
// DIR (auditlink.Rendezvous), keyed by a hash of everything that makes one
// audit differ from another (auditlink.SharedKey), so taps configured
// differently never share a server.

// auditServerCommand is the hidden subcommand that runs the shared audit
// process.
const auditServerCommand = "__audit-server"

// sharedAuditWanted reports whether this tap's audit goes to the shared
// audit process: --shared-audit, a per_event lifecycle, --state, and an
// audit that writes nothing to the tap's own stderr (the summary, the
// console and --log - belong to this event's stderr, which only an audit
// process of its own holds).
func sharedAuditWanted(sf *stdioFlags, l *loaded) bool {
	cfg := l.Config
	cfg.Lifecycle = sf.lifecycle
	return sf.sharedAudit && sf.state != "" && cfg.Resolved().Lifecycle == "per_event" &&
		!sf.summary && !sf.console && sf.log != "-" && runtime.GOOS == "linux"
}

// connectSharedAudit connects this tap's audit link to the shared audit
// process of its --state directory, starting one when none answers.
func (m *Main) connectSharedAudit(sf *stdioFlags, flagArgs []string, conn string, backlog int) (*auditlink.Link, error) {
	key, err := auditlink.SharedKey(version, flagArgs, sf.registration)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r := auditlink.Rendezvous{Dir: sf.state, Key: key, Diag: m.diag(),
		Argv: func(p auditlink.Paths) []string {
			return append([]string{exe, auditServerCommand, "--audit-key", key, "--socket", p.Sock,
				"--lock", p.Lock, "--ready-fd", "3"}, flagArgs...)
		}}
	return r.Connect(conn, backlog)
}

// runAuditServer is the shared audit process: `ahp-tap __audit-server
// --audit-key KEY --socket PATH --lock PATH --ready-fd FD STDIO-FLAGS...`.
func (m *Main) runAuditServer(_ context.Context, args []string) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGQUIT)
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
	sf.stdioMetrics(m.Stderr) // one endpoint for every link this process serves
	sf.stdioUI(m.Stderr)      // one live view for every link this process serves
	// The rules load while the server already listens; each link's
	// audit waits for them.
	rulesLoaded := make(chan struct{})
	var l *loaded
	go func() {
		defer close(rulesLoaded)
		var err error
		if l, err = sf.load(); err != nil {
			printable.Fprintf(m.Stderr, "ahp-tap: shared audit process: %v\n", err)
			l = nil
		}
	}()
	srv := &auditlink.Server{
		Key: *key, Priority: prio, Log: m.Stderr,
		Reserve: auditReserve(sf.drain), MinClose: minSinkClose,
		Open: func(conn string, diag io.Writer) (*auditlink.Audit, error) {
			<-rulesLoaded
			if l == nil {
				return nil, errors.New("the shared audit process cannot load the rules; see the .err file in --state")
			}
			lsf := sf
			lsf.conn, lsf.audit = conn, auditOff                                            // no forwarding here: only the session is used
			run, err := (&Main{Stderr: diag}).prepareStdio(&lsf, l, []string{"true"}, prio) // this tap's notices go back to its stderr
			if err != nil {
				return nil, err
			}
			return &auditlink.Audit{Session: run.session, CloseSinks: run.closeWithin}, nil
		},
	}
	debug.SetMemoryLimit(64 << 20)
	debug.SetGCPercent(50)
	var ready *os.File
	if *readyFD >= 0 {
		ready = os.NewFile(uintptr(*readyFD), "audit-ready")
	}
	return srv.Serve(*sock, *lock, ready)
}
