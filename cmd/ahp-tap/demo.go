package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/ahp-tap/ahp-tap/examples"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/stdiotap"
	"github.com/ahp-tap/ahp-tap/tap"
)

// demoRegistration is the registration the demo's harness would hold for
// its backend: one stdio backend, persistent, intercepting tool.before and
// observing tool.after and session.end.
const demoRegistration = `{
  "protocolVersion": "draft",
  "hooks": [
    {
      "id": "com.example.demo_policy",
      "transport": {"type": "stdio", "command": "ahp-tap", "args": ["example-backend", "--mode", "demo"], "lifecycle": "persistent"},
      "subscriptions": [
        {"events": ["tool.before"], "mode": "intercept", "timeoutMs": 5000, "failurePolicy": "fail-closed", "content": {"default": "metadata"}},
        {"events": ["tool.after", "session.end"], "mode": "observe", "content": {"default": "metadata"}}
      ]
    }
  ]
}`

const demoHook = "com.example.demo_policy"

// runDemo runs ahp-tap's main job on an embedded example: the example
// harness talks to the example backend (`--mode demo`, which has a few
// deliberate faults) through a live stdio tap, and the findings are printed
// as the tap makes them.
func (m *Main) runDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	mode := fs.String("mode", "demo", "example-backend `MODE` to audit:"+examples.ModeHelp())
	logPath := fs.String("log", "", "also append the findings to the violation log at `PATH`")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := noArguments(fs); err != nil {
		return err
	}
	if err := checkExampleMode("demo", *mode); err != nil {
		return err
	}
	self, err := selfPath()
	if err != nil {
		return usageError("demo: %v", err)
	}
	reg, _, err := tap.ParseJSON([]byte(demoRegistration))
	if err != nil {
		return fmt.Errorf("demo registration: %w", err)
	}
	out := &lockedWriter{w: m.Stdout}
	fmt.Fprintf(out, `ahp-tap demo: an example harness talks to an example backend through a live stdio tap.
  harness:  ahp-tap example-harness
  backend:  ahp-tap stdio --registration <embedded> --hook %s -- ahp-tap example-backend --mode %s
The backend in this mode has deliberate faults; ahp-tap forwards every byte unchanged and reports them.

`, demoHook, *mode)

	harness, toHarness, fromHarness, err := startDemoHarness(ctx, self, out)
	if err != nil {
		return err
	}

	o, err := output.Open(output.Config{Name: "demo", Diag: m.Stderr, Log: *logPath, Plain: out, PlainPrefix: "  ahp-tap ▸ "})
	if err != nil {
		return usageError("demo: %v", err)
	}
	defer o.Close(time.Now().Add(time.Second))
	// The session reports the registration's own findings first.
	session := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: reg, HookID: demoHook},
		Rules: rules.Set(rules.Options{}), Sink: o.Sink()})
	t := stdio.New(stdio.Config{
		Command: self, Args: []string{"example-backend", "--mode", *mode},
		Stdin: fromHarness, Stdout: toHarness, Stderr: out,
		Session: session,
		Hash:    true, Diag: m.Stderr,
	})
	res, err := t.Run(ctx)
	toHarness.Close()
	if err != nil {
		harness.Process.Kill()
		harness.Wait()
		return fmt.Errorf("demo: %w", err)
	}
	if err := harness.Wait(); err != nil {
		printable.Fprintf(out, "the example harness ended with %v\n", err)
	}

	o.Close(time.Now().Add(time.Second))
	s := o.Summary(res.NotAudited, session)
	if *logPath == "" {
		s.FindingsTo = nil // printed above, as they came
	}
	s.Streams = stdiotap.Streams(res)
	fmt.Fprintln(out)
	s.WriteText(out)
	fmt.Fprint(out, demoEpilogue)
	return nil
}

// demoEpilogue ends the demo: what to do next.
const demoEpilogue = `
To audit your own backend, put ahp-tap in front of it in the harness's registration:
  ahp-tap stdio --registration hooks.json --hook ID --console --log findings.jsonl -- your-backend [args]
--console prints findings like the lines above on stderr; 'ahp-tap tail -f findings.jsonl' follows the log.
To test your harness against a backend with known faults:
  ahp-tap example-backend --mode MODE   (ahp-tap example-backend -h lists the modes)
`

// startDemoHarness starts the example harness, a real process speaking on
// its stdin and stdout; the tap sits between it and the backend, exactly
// as `ahp-tap stdio` does. Its stderr goes to out.
func startDemoHarness(ctx context.Context, self string, out io.Writer) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	harness := exec.CommandContext(ctx, self, "example-harness")
	harness.Stderr = out
	toHarness, err := harness.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	fromHarness, err := harness.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := harness.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("demo: starting the example harness: %w", err)
	}
	return harness, toHarness, fromHarness, nil
}

// lockedWriter serialises writes from the harness's stderr copier and the
// audit goroutine, so lines do not interleave.
type lockedWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
