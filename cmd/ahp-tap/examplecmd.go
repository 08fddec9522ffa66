package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ahp-tap/ahp-tap/examples"
	"github.com/ahp-tap/ahp-tap/tap"
)

func init() { examples.Version = version }

// runExampleBackend is `ahp-tap example-backend`: the example AHP backend
// (package examples) on stdio, or over HTTP with --listen.
func (m *Main) runExampleBackend(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("example-backend", flag.ContinueOnError)
	mode := fs.String("mode", "conforming", "`MODE`, one of:"+examples.ModeHelp())
	delay := fs.Duration("delay", 2*time.Second, "how long (`DURATION`) --mode slow waits before answering")
	snapshot := fs.String("protocol-version", tap.DefaultSnapshot, "the protocol snapshot `V` the backend supports")
	listen := fs.String("listen", "", "serve AHP over HTTP on `ADDR` (a loopback host:port) instead of stdio, until SIGINT/SIGTERM")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := noArguments(fs); err != nil {
		return err
	}
	b, err := examples.NewBackend(*mode, *delay, *snapshot, m.Stdout, m.Stderr)
	if err != nil {
		return err
	}
	if *listen != "" {
		err = b.ServeHTTP(ctx, *listen)
	} else {
		err = b.ServeStdio(m.Stdin)
	}
	if errors.Is(err, examples.ErrCrash) {
		return &exitError{code: 1} // said already
	}
	return err
}

// runExampleHarness is `ahp-tap example-harness`: the example AHP harness
// (package examples). With `-- CMD ARGS` it starts the backend itself, as
// a harness does; without, it speaks on its own stdin and stdout.
func (m *Main) runExampleHarness(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("example-harness", flag.ContinueOnError)
	snapshot := fs.String("protocol-version", tap.DefaultSnapshot, "protocol snapshot `V` to send")
	timeout := fs.Duration("timeout", 5*time.Second, "how long (`DURATION`) to wait for each response")
	url := fs.String("url", "", "play the session over HTTP: POST each message to `URL` (waits up to --timeout for it to accept connections)")
	lifecycle := fs.String("lifecycle", "persistent", "`LIFECYCLE` of the backend CMD: persistent (one process for the session) or per_event (one process per message, which gets it and then EOF)")
	var waitFor listFlag
	fs.Var(&waitFor, "wait-for", "with --url: first wait (up to --timeout) until `ADDR` (host:port) accepts connections too, e.g. the backend behind a tap; repeatable")
	regPath := fs.String("registration", "", "dispatch to every backend of the registration `FILE` (as a harness does: serial, in order), instead of one backend")
	fault := fs.String("fault", "none", "with --registration, a deliberate conduct `FAULT`, one of:"+examples.FaultHelp())
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if *regPath != "" {
		if fs.NArg() > 0 || *url != "" {
			return usageError("example-harness: --registration starts the registration's backends; give no CMD or --url")
		}
		return examples.PlayConduct(*regPath, *fault, *snapshot, m.Stderr)
	}
	return examples.Play(ctx, examples.HarnessConfig{Snapshot: *snapshot, Timeout: *timeout, URL: *url, Lifecycle: *lifecycle,
		WaitFor: waitFor, Argv: fs.Args(), Stdin: m.Stdin, Stdout: m.Stdout, Say: m.Stderr})
}

var errNoSelf = errors.New("cannot find the ahp-tap executable to re-run")

// selfPath is the running ahp-tap binary, re-executed for the example parts.
func selfPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%w: %v", errNoSelf, err)
	}
	return p, nil
}
