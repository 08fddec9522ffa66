package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/viewserve"
	"github.com/ahp-tap/ahp-tap/mock"
	"github.com/ahp-tap/ahp-tap/replay"
	"github.com/ahp-tap/ahp-tap/tap"
)

const mockUsage = `usage: ahp-tap mock backend [flags] (--stdio | --listen ADDR) CAPTURE
       ahp-tap mock harness [flags] CAPTURE -- BACKEND [ARGS...]
       ahp-tap mock harness [flags] --url URL CAPTURE`

// mockReadTimeout is how long a harness may take to send one request, head
// and body, to mock backend --listen (--read-timeout).
const mockReadTimeout = 30 * time.Second

// mockFlags are the flags both sides of `ahp-tap mock` share.
type mockFlags struct {
	engineFlags
	match         string
	ignore        pointerList
	allowRedacted bool
	logPath       string
	failOn        string
	quiet         bool
	ui            string
}

// pointerList is a repeatable JSON Pointer flag.
type pointerList []mock.Pointer

func (p *pointerList) String() string { return fmt.Sprint(len(*p)) }

func (p *pointerList) Set(s string) error {
	ptr, err := mock.ParsePointer(s)
	if err != nil {
		return err
	}
	*p = append(*p, ptr)
	return nil
}

func (mf *mockFlags) register(fs *flag.FlagSet) {
	mf.engineFlags.register(fs)
	fs.StringVar(&mf.match, "match", "strict", "how a request matches a recorded one, `strict|shape`: strict compares the event's content, shape only its members and their kinds (volatile ids, times, source and protocolVersion are never compared)")
	fs.Var(&mf.ignore, "ignore", "leave the member at JSON `POINTER` out of matching (backend) or of the comparison (harness); repeatable; * matches any one token")
	fs.BoolVar(&mf.allowRedacted, "allow-redacted", false, "use a capture whose bodies hold redacted credentials (the placeholder is sent as recorded)")
	fs.StringVar(&mf.logPath, "log", "", "also append the audit's findings to the violation log at `PATH`")
	fs.StringVar(&mf.failOn, "fail-on", "error", "exit 1 when a finding at or above `LEVEL` exists: error, warn, info or never")
	fs.BoolVar(&mf.quiet, "quiet", false, "do not print each finding on stderr (the summary and the mock's own results still are)")
	fs.StringVar(&mf.ui, "ui", "", "serve the live view of the audited traffic (the HTML report's conversation, updated as it happens) at http://`ADDR`/ (loopback only)")
}

// runMock dispatches `ahp-tap mock backend|harness`.
func (m *Main) runMock(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError("mock: backend or harness? (run 'ahp-tap mock -h')")
	}
	switch args[0] {
	case "backend":
		return m.runMockBackend(ctx, args[1:])
	case "harness":
		return m.runMockHarness(ctx, args[1:])
	case "-h", "--help", "help":
		printHelp(m.Stdout, "mock", nil)
		return nil
	}
	return usageError("mock: %q is not backend or harness (run 'ahp-tap mock -h')", args[0])
}

// prepareMock reads the flags' files and opens the peer (mock.Open) on
// capturePath, audited as transport.
func (m *Main) prepareMock(name string, fs *flag.FlagSet, mf *mockFlags, capturePath string, transport tap.Transport, conn string) (*mock.Run, error) {
	match, err := mock.ParseMatch(mf.match)
	if err != nil {
		return nil, usageError("%s: %v", name, err)
	}
	var threshold tap.Level
	if mf.failOn != "never" {
		if threshold, err = tap.ParseLevel(mf.failOn); err != nil {
			return nil, usageError("--fail-on %q is not error, warn, info or never", mf.failOn)
		}
	}
	l, err := mf.load()
	if err != nil {
		return nil, err
	}
	set := flagsGiven(fs)
	r, err := mock.Open(mock.Config{Name: name, Version: version, Capture: capturePath, AllowRedacted: mf.allowRedacted,
		Match: match, Ignore: mf.ignore, Threshold: threshold, Link: l, Overrides: replay.OverridesOf(set),
		Transport: transport, Conn: conn, Log: mf.logPath, Quiet: mf.quiet, UI: mf.ui, Stderr: m.Stderr, Diag: m.diag()})
	if err != nil {
		return nil, usageError("%v", err)
	}
	return r, nil
}

// finishMock is the exit of a mock peer's run: 1 when it failed.
func finishMock(r *mock.Run) func(mock.Result, error) error {
	return func(res mock.Result, err error) error {
		failed, err := r.Finish(res, err)
		if err != nil {
			return err
		}
		if failed {
			return &exitError{code: 1}
		}
		return nil
	}
}

// runMockBackend serves the backend side of a capture.
func (m *Main) runMockBackend(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mock backend", flag.ContinueOnError)
	var mf mockFlags
	mf.register(fs)
	useStdio := fs.Bool("stdio", false, "serve on standard input and output, as a stdio backend the harness starts")
	listen := fs.String("listen", "", "serve HTTP on `ADDR` (host:port), as an HTTP backend; loopback only unless --allow-remote")
	allowRemote := fs.Bool("allow-remote", false, "let --listen serve on an address other than loopback (anyone who can reach it may read the recording: tool inputs, file contents)")
	readTimeout := fs.Duration("read-timeout", mockReadTimeout, "with --listen: close a connection whose request (head and body) has not arrived within `DURATION`")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if *useStdio == (*listen != "") {
		return usageError("mock backend: give exactly one of --stdio and --listen ADDR (run 'ahp-tap mock -h')")
	}
	if fs.NArg() != 1 {
		return usageError("mock backend: one CAPTURE expected (run 'ahp-tap mock -h')")
	}
	if *useStdio {
		conn := fmt.Sprintf("stdio:%d", os.Getpid())
		r, err := m.prepareMock("mock backend", fs, &mf, fs.Arg(0), tap.Stdio, conn)
		if err != nil {
			return err
		}
		return finishMock(r)(r.ServeStdio(m.Stdin, m.Stdout, conn))
	}
	if *readTimeout <= 0 {
		return usageError("mock backend: --read-timeout must be positive")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return usageError("mock backend: --listen: %v", err)
	}
	defer ln.Close()
	// Issue 28 item 11: the recording holds tool inputs and file contents;
	// off loopback it is served to everyone who can reach the address, so
	// that takes --allow-remote, as the HTTP tap's --forward and --metrics do.
	if !viewserve.IsLoopback(ln.Addr()) {
		if !*allowRemote {
			return usageError("mock backend: --listen on %s (not loopback) would serve the recording to everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", ln.Addr())
		}
		printable.Fprintf(m.Stderr, "ahp-tap mock backend: WARNING: --allow-remote: the recording on %s is served to everyone who can reach that address\n", ln.Addr())
	}
	r, err := m.prepareMock("mock backend", fs, &mf, fs.Arg(0), tap.HTTP, "")
	if err != nil {
		return err
	}
	return finishMock(r)(r.ServeHTTP(ctx, ln, *readTimeout))
}

// runMockHarness plays the harness side of a capture against a live
// backend and reports every answer that differs from the recording.
func (m *Main) runMockHarness(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mock harness", flag.ContinueOnError)
	var mf mockFlags
	mf.register(fs)
	url := fs.String("url", "", "play against the HTTP backend at `URL` instead of starting one")
	wait := fs.Duration("wait", 10*time.Second, "how long (`DURATION`) to wait for each answer")
	bearerEnv := fs.String("bearer-env", "", "with --url: send \"Authorization: Bearer\" with the credential held by environment variable `VAR` (never written to any output)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError("mock harness: no CAPTURE given (run 'ahp-tap mock -h')")
	}
	capturePath, argv := rest[0], rest[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if (*url == "") == (len(argv) == 0) {
		return usageError("mock harness: give either -- BACKEND [ARGS...] or --url URL (run 'ahp-tap mock -h')")
	}
	if *wait <= 0 {
		return usageError("mock harness: --wait must be positive")
	}
	if *url != "" {
		r, err := m.prepareMock("mock harness", fs, &mf, capturePath, tap.HTTP, "")
		if err != nil {
			return err
		}
		token := ""
		if *bearerEnv != "" {
			if token = os.Getenv(*bearerEnv); token == "" {
				return usageError("mock harness: --bearer-env: $%s is empty or not set", *bearerEnv)
			}
		}
		return finishMock(r)(r.PlayHTTP(ctx, *url, token, *wait))
	}
	r, err := m.prepareMock("mock harness", fs, &mf, capturePath, tap.Stdio, "")
	if err != nil {
		return err
	}
	return finishMock(r)(r.PlayStdio(ctx, argv, m.Stderr, *wait))
}
