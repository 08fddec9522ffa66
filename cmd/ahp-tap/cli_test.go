package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/norace"
)

// update rewrites golden files: go test ./cmd/ahp-tap -run Golden -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// tapBinary is the ahp-tap binary built once for the CLI tests.
var tapBinary string

// childBinary is this test binary built without the race detector (the
// test binary itself when it is not race-built; norace.Build): the helper
// backends, the generators of big test inputs, and the ahp-tap children
// of the tests run it (with AHP_TAP_MAIN=1), the stdio tests' taps
// (tapCmd) included. A race-built child costs several times the CPU to
// start and to run; the few taps that stay race-built are named at
// raceTapCmd.
var childBinary string

// buildBinaries builds tapBinary and, under -race, childBinary into dir,
// the two builds side by side.
func buildBinaries(dir string) error {
	childBinary = os.Args[0]
	builds := []func() error{func() error {
		if out, err := exec.Command("go", "build", "-o", tapBinary, ".").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
		return nil
	}}
	if raceEnabled {
		builds = append(builds, func() (err error) {
			childBinary, err = norace.Build(dir)
			return err
		})
	}
	errs := make(chan error, len(builds))
	for _, build := range builds {
		go func() { errs <- build() }()
	}
	var first error
	for range builds {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sharedAHP is the upstream reference data beside the repository.
const sharedAHP = "../../../shared/ahp"

func TestMain(m *testing.M) {
	runChild() // stdio_test.go: the test binary as ahp-tap or a helper backend
	flag.Parse()
	norace.QuickExit() // race-built children: no 1 s sleep at exit
	moreParallel()
	dir, err := os.MkdirTemp("", "ahp-tap-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tapBinary = filepath.Join(dir, "ahp-tap")
	if err := buildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary did.
type result struct {
	code           int
	stdout, stderr string
}

// runTap runs the built binary with args and stdin, in the package dir.
func runTap(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	// A run that should end but does not fails this test after a bound,
	// rather than the whole package at go test's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tapBinary, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("ahp-tap %v did not end within the bound; stderr %q", args, errb.String())
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running ahp-tap %v: %v", args, err)
	}
	return r
}

// fixture is the path of an upstream fixture, skipping when absent.
func fixture(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(sharedAHP, "fixtures/draft", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no shared AHP fixtures: %v", err)
	}
	return p
}

// writeFile writes a temp file and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update after checking):\ngot:\n%s\nwant:\n%s", p, got, want)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"no-such-command"},
		{"check"},
		{"check", "--no-such-flag", "x.json"},
		{"check", "--format", "xml", "x.json"},
		{"check", "--edit-context", "{not json", "x.json"},
		{"check", "--edit-context", "[1,2]", "x.json"},
		{"check", "--registration", "/no/such/reg.json", "x.json"},
		{"check", "--hook", "h", "x.json"},
		{"check", "--spec", "/no/such/dir", "x.json"},
		{"check", "--timeout", "-1s", "x.json"},
		{"replay"},
		{"replay", "--fail-on", "sometimes", "x"},
		{"replay", "--direction", "sideways", "x"},
		{"rules", "extra"},
		{"rules", "--format", "yaml"},
	} {
		r := runTap(t, "", args...)
		if r.code != 2 {
			t.Errorf("ahp-tap %q: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
			continue
		}
		if len(args) > 0 && strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("ahp-tap %q: stderr is not one line: %q", args, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("ahp-tap %q: wrote to stdout on a usage error: %q", args, r.stdout)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"check", "replay", "rules"} {
		if r := runTap(t, "", cmd, "-h"); r.code != 0 || !strings.Contains(r.stderr, "-format") {
			t.Errorf("ahp-tap %s -h: exit %d, stderr %q; want 0 and the flags", cmd, r.code, r.stderr)
		}
	}
}
