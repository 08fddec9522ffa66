package examples

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/syncwriter"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/stdiotap"
	"github.com/ahp-tap/ahp-tap/tap"
)

// DemoRegistration is the registration the demo's harness would hold for
// its backend: one stdio backend, persistent, intercepting tool.before and
// observing tool.after and session.end.
const DemoRegistration = `{
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

// DemoHook is the demo registration's one hook.
const DemoHook = "com.example.demo_policy"

// DemoConfig is `ahp-tap demo` once its flags are read.
type DemoConfig struct {
	// Self is the ahp-tap binary, run as the example harness and backend.
	Self string
	// Mode is the example backend's --mode; Log a violation log ("": none).
	Mode, Log string
	// Stdout gets the demo's story and findings, Stderr ahp-tap's notices.
	Stdout, Stderr io.Writer
}

// RunDemo runs ahp-tap's main job on an embedded example: the example
// harness talks to the example backend (`--mode demo`, which has a few
// deliberate faults) through a live stdio tap, and the findings are printed
// as the tap makes them.
func RunDemo(ctx context.Context, c DemoConfig) error {
	reg, _, err := tap.ParseJSON([]byte(DemoRegistration))
	if err != nil {
		return fmt.Errorf("demo registration: %w", err)
	}
	out := syncwriter.New(c.Stdout)
	fmt.Fprintf(out, `ahp-tap demo: an example harness talks to an example backend through a live stdio tap.
  harness:  ahp-tap example-harness
  backend:  ahp-tap stdio --registration <embedded> --hook %s -- ahp-tap example-backend --mode %s
The backend in this mode has deliberate faults; ahp-tap forwards every byte unchanged and reports them.

`, DemoHook, c.Mode)

	harness, toHarness, fromHarness, err := startDemoHarness(ctx, c.Self, out)
	if err != nil {
		return err
	}

	o, err := output.Open(output.Config{Name: "demo", Diag: c.Stderr, Log: c.Log, Plain: out, PlainPrefix: "  ahp-tap ▸ "})
	if err != nil {
		return fmt.Errorf("demo: %v", err)
	}
	defer o.Close(time.Now().Add(time.Second))
	// The session reports the registration's own findings first.
	session := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio, Registration: reg, HookID: DemoHook},
		Rules: rules.Set(rules.Options{}), Sink: o.Sink()})
	t := stdio.New(stdio.Config{
		Command: c.Self, Args: []string{"example-backend", "--mode", c.Mode},
		Stdin: fromHarness, Stdout: toHarness, Stderr: out,
		Session: session,
		Hash:    true, Diag: c.Stderr,
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
	if c.Log == "" {
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
