package examples

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/norace"
	"github.com/ahp-tap/ahp-tap/tap"
)

// TestMain lets the test binary be the example harness and backend the
// demo starts (it runs Self with "example-harness" and "example-backend
// --mode MODE"), as ahp-tap is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "example-harness":
			err := Play(context.Background(), HarnessConfig{Snapshot: tap.DefaultSnapshot, Timeout: 5 * time.Second,
				Lifecycle: "persistent", Stdin: os.Stdin, Stdout: os.Stdout, Say: os.Stderr})
			if err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		case "example-backend":
			b, err := NewBackend(os.Args[3], 0, tap.DefaultSnapshot, os.Stdout, os.Stderr)
			if err == nil {
				err = b.ServeStdio(os.Stdin)
			}
			if err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	norace.QuickExit() // race-built children: no 1 s sleep at exit
	os.Exit(m.Run())
}

// TestRunDemo runs the demo with the demo backend (deliberate faults:
// findings printed as they come) and with the conforming one (none).
func TestRunDemo(t *testing.T) {
	for _, c := range []struct {
		mode     string
		findings bool
	}{{"demo", true}, {"conforming", false}} {
		var out, errb bytes.Buffer
		err := RunDemo(context.Background(), DemoConfig{Self: os.Args[0], Mode: c.mode, Stdout: &out, Stderr: &errb})
		if err != nil {
			t.Fatalf("--mode %s: RunDemo = %v; stderr:\n%s", c.mode, err, errb.String())
		}
		text := out.String()
		if has := strings.Contains(text, "  ahp-tap ▸ "); has != c.findings {
			t.Errorf("--mode %s: finding lines printed = %v, want %v:\n%s", c.mode, has, c.findings, text)
		}
		if !strings.Contains(text, "To audit your own backend") || !strings.Contains(text, "harness: tool.before") {
			t.Errorf("--mode %s: the demo's session or epilogue is missing:\n%s", c.mode, text)
		}
	}
}
