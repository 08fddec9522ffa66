// Command ahp-tap is a transparent proxy and traffic auditor for the Agent
// Hooks Protocol. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ahp-tap/ahp-tap/conduct/live"
	tapmetrics "github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/internal/nbwriter"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/stdiotap"
)

// version is ahp-tap's version, set at build time with -ldflags.
var version = "0.1.0-dev"

func init() { tapmetrics.BuildVersion = version }

// versionStamp is the version with what the build recorded: the commit
// (and "modified" for a dirty tree) when built from a git checkout with
// 'go install' or 'go build', and the Go version.
func versionStamp() string {
	v := version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (commit " + rev + dirty + ")"
	}
	return v + " " + bi.GoVersion
}

// Main holds what a command needs from the process: its streams and
// environment. Tests build one with buffers.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr is the process's standard error as it is: a stdio backend
	// gets it as its own stderr, untouched.
	Stderr io.Writer
	// Diag receives ahp-tap's own messages (diagnostics, summaries, --log
	// -). main puts a non-blocking writer in front of stderr so that a
	// harness that never reads it cannot hold ahp-tap up (issue 8 items
	// 3 and 8); nil means Stderr.
	Diag io.Writer
	// flush waits, bounded, for Diag's queued writes before an exit (nil:
	// nothing to flush).
	flush func()
	// force, when a command sets it, is called on a second termination
	// signal: the command cuts its shutdown short and still closes its log
	// and capture within forceBound (issue 21 item 10). forced is the
	// signal, for the exit status. Without force, the second signal exits
	// at once.
	force  atomic.Pointer[func()]
	forced atomic.Int32
}

// diag is where ahp-tap's own messages go.
func (m *Main) diag() io.Writer {
	if m.Diag != nil {
		return m.Diag
	}
	return m.Stderr
}

// flushDiag writes what Diag still holds, within a bound.
func (m *Main) flushDiag() {
	if m.flush != nil {
		m.flush()
	}
}

// exitFlush bounds the wait for queued diagnostics at exit.
const exitFlush = time.Second

// An interrupted is the cause of the command context's end when a SIGINT
// or SIGTERM arrived: offline commands stop with what they have and exit
// 128+N (130, 143).
type interrupted struct{ sig syscall.Signal }

func (e *interrupted) Error() string { return "interrupted by " + unix.SignalName(e.sig) }

// interruption returns the signal that ended ctx, if one did.
func interruption(ctx context.Context) (syscall.Signal, bool) {
	var in *interrupted
	if errors.As(context.Cause(ctx), &in) {
		return in.sig, true
	}
	return 0, false
}

// interruptedError is the exit of an offline command stopped by a signal.
func interruptedError(sig syscall.Signal, what string) error {
	return &exitError{code: 128 + int(sig), msg: fmt.Sprintf("%s: interrupted by %s; the report covers what was read before it", what, unix.SignalName(sig))}
}

// exitError carries an exit code out of a command. Code 2 is a usage or
// I/O error, 1 a finding at or above the failure level.
type exitError struct {
	code int
	msg  string // one line for stderr; empty for none
	// cmd is the command that failed ("check", "mock backend"), which
	// prefixes msg: every command's error line reads
	// "ahp-tap <command>: …" (issue 21 item 7). Run sets it.
	cmd string
}

func (e *exitError) Error() string { return e.msg }

// usageError is exit code 2 with a one-line reason.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, args...)}
}

func main() {
	diag := nbwriter.New(os.Stderr, 0)
	m := &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Diag: diag,
		flush: func() { diag.Close(exitFlush) }}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	if len(os.Args) < 2 || os.Args[1] != "stdio" {
		// The first SIGINT/SIGTERM ends the command's context: http drains
		// within --drain, check and replay stop with what they have. A
		// second one exits at once (issue 8 item 5). `ahp-tap stdio`
		// handles signals itself: they are the backend's business.
		sigs := make(chan os.Signal, 4)
		stdiotap.NotifyUnignored(sigs, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			s := (<-sigs).(syscall.Signal)
			first := time.Now()
			cancel(&interrupted{sig: s})
			// A signal repeated within stdio.SignalRepeat is the same
			// request (issue 21 item 10): GNU timeout signals its child
			// and then its process group, microseconds apart.
			for s = (<-sigs).(syscall.Signal); time.Since(first) < stdio.SignalRepeat; s = (<-sigs).(syscall.Signal) {
			}
			if force := m.force.Load(); force != nil {
				// Exit now, but still close the log and the capture
				// (their end record) within forceBound.
				m.forced.Store(int32(s))
				printable.Fprintf(m.diag(), "ahp-tap: %s again: exiting now; requests in flight are cut, the log and capture are closed within %v\n", unix.SignalName(s), forceBound)
				(*force)()
				time.Sleep(2 * forceBound) // the command ends sooner; this is the backstop
			}
			printable.Fprintf(m.diag(), "ahp-tap: %s again: exiting now, without finishing the shutdown\n", unix.SignalName(s))
			m.flushDiag()
			os.Exit(128 + int(s))
		}()
	}
	code := m.exitCode(m.Run(ctx, os.Args[1:]))
	if s := m.forced.Load(); s != 0 {
		code = 128 + int(s)
	}
	m.flushDiag()
	os.Exit(code)
}

// forceBound bounds a forced exit (a second termination signal) of a
// command that closes its log and capture then (Main.force): they get
// this long, and the process exits at twice this whatever is left.
const forceBound = time.Second

// exitCode maps an error from Run to the process exit code, printing its
// one-line reason.
func (m *Main) exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.code == 0 {
		return 0
	}
	if errors.As(err, &ee) {
		switch {
		case ee.msg == "":
		case ee.cmd != "":
			printable.Fprintf(m.diag(), "ahp-tap %s: %s\n", ee.cmd, ee.msg)
		default:
			printable.Fprintf(m.diag(), "ahp-tap: %s\n", ee.msg)
		}
		return ee.code
	}
	printable.Fprintf(m.diag(), "ahp-tap: %v\n", err)
	return 2
}

const usage = `usage: ahp-tap <command> [flags] [args]

Commands:
  demo            run an example harness and backend through a live stdio tap
  check           check standalone files (messages, stdio streams, registrations)
  replay          re-check recorded captures
  diff            compare two captures: changed answers, new and gone findings (diff A B)
  view            open captures in the HTML report's conversation view (view [--listen ADDR] CAPTURE...)
  stdio           wrap a stdio backend: ahp-tap stdio [flags] -- CMD [ARGS...]
  http            reverse (or forward) proxy in front of an HTTP backend
  rules           list every check and rule
  example-backend an example AHP backend on stdio or HTTP, for testing harnesses (--mode MODE)
  example-harness an example AHP harness that plays a short session (stdio, per_event or HTTP)
  wrap            put ahp-tap in front of every backend of a registration (--dir DIR [-o FILE] REGISTRATION)
  unwrap          take ahp-tap out of a wrapped registration again
  mock            serve (mock backend) or play (mock harness) one side of a capture, audited
  ca              manage the CA for HTTPS interception (ca init DIR)
  version         print the version

  tail            print and follow a violation log as readable lines (tail [-f] LOG...)
  help            this list, or a command's help (help COMMAND)

Run 'ahp-tap help COMMAND' or 'ahp-tap COMMAND --help' for a command's flags.
`

// Run runs one ahp-tap command. Its error, if any, names the command
// (commandName), so that every error line starts "ahp-tap <command>: ".
func (m *Main) Run(ctx context.Context, args []string) error {
	err := m.run(ctx, args)
	if err == nil || len(args) == 0 {
		return err
	}
	cmd := commandName(args)
	var ee *exitError
	if !errors.As(err, &ee) {
		return &exitError{code: 2, msg: strings.TrimPrefix(err.Error(), cmd+": "), cmd: cmd}
	}
	if ee.cmd == "" && ee.msg != "" {
		ee.cmd = cmd
		// Messages written as "cmd: …" (or "mock: …" for "mock backend")
		// lose that prefix: the line gets it once.
		if cmd != "" {
			for _, p := range []string{cmd + ": ", strings.Fields(cmd)[0] + ": "} {
				ee.msg = strings.TrimPrefix(ee.msg, p)
			}
		}
	}
	return err
}

// commandName is the command args run, as error lines name it: "check",
// "mock backend", or for "help CMD" CMD's name.
func commandName(args []string) string {
	cmd, rest := args[0], args[1:]
	if cmd == "help" && len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	if cmd == "mock" && len(rest) > 0 && (rest[0] == "backend" || rest[0] == "harness") {
		return cmd + " " + rest[0]
	}
	if _, known := synopses[cmd]; !known && cmd != "mock" {
		return "" // an unknown command: "ahp-tap: unknown command …"
	}
	return cmd
}

func (m *Main) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
		return &exitError{code: 2}
	}
	cmd, rest := args[0], args[1:]
	if cmd == "help" && len(rest) > 0 {
		// help CMD: CMD's help; help mock backend: that mock's.
		sub := rest[1:]
		cmd, rest = rest[0], []string{"--help"}
		if cmd == "mock" && len(sub) > 0 {
			rest = []string{sub[0], "--help"}
		}
	}
	if cmd == "mock" && len(rest) > 1 && (rest[0] == "backend" || rest[0] == "harness") && wantsHelp(cmd, rest[1:]) {
		// mock backend --help lists mock backend's flags (issue 21
		// item 7), not only the usage lines of both.
		rest = []string{rest[0], "--help"}
	} else if wantsHelp(cmd, rest) {
		// Before the command acts on anything: 'ca init -h' must not
		// create a CA in a directory named -h.
		switch cmd {
		case "ca", "version", "help":
			printHelp(m.Stderr, cmd, nil)
			return nil
		}
		rest = []string{"--help"}
	}
	switch cmd {
	case "check":
		return m.runCheck(ctx, rest)
	case "replay":
		return m.runReplay(ctx, rest)
	case "diff":
		return m.runDiff(ctx, rest)
	case "view":
		return m.runView(ctx, rest)
	case "rules":
		return m.runRules(ctx, rest)
	case "tail":
		return m.runTail(ctx, rest)
	case "stdio":
		return m.runStdio(ctx, rest)
	case stdiotap.WorkerCommand: // hidden.go: not for people
		return m.runAuditProcess(ctx, rest)
	case stdiotap.ServerCommand: // hidden.go: not for people
		return m.runAuditServer(ctx, rest)
	case live.ServerCommand: // hidden.go: not for people
		return m.runConductServer(ctx, rest)
	case "demo":
		return m.runDemo(ctx, rest)
	case "example-backend":
		return m.runExampleBackend(ctx, rest)
	case "example-harness":
		return m.runExampleHarness(ctx, rest)
	case "http":
		return m.runHTTP(ctx, rest)
	case "ca":
		return m.runCA(ctx, rest)
	case "__watchdog":
		// Internal: the watchdog of a stdio tap (stdio.Watchdog).
		return &exitError{code: stdio.Watchdog(m.Stdin)}
	case "wrap":
		return m.runWrap(ctx, rest)
	case "unwrap":
		return m.runUnwrap(ctx, rest)
	case "mock":
		return m.runMock(ctx, rest)
	case "version", "--version", "-version":
		fmt.Fprintf(m.Stdout, "ahp-tap %s\n", versionStamp())
		return nil
	case "help", "-h", "--help", "-help":
		fmt.Fprint(m.Stdout, usage)
		return nil
	}
	return usageError("unknown command %q (run 'ahp-tap help')", cmd)
}
