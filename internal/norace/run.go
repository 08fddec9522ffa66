// Package norace runs tests, or the processes tests start, from a build of
// the package's test binary without the race detector when `go test
// -race` runs them. The race runtime costs several times the CPU (about
// tenfold for the engine and the parsers), and most of the test loop's
// CPU went to tests that push many megabytes through single-goroutine code
// (the engine's 150 MiB conversation, the HAR cutter's 16 MiB strings, the
// schema mutation sweep): the race detector has nothing to find there,
// while CI's `go test -race ./...` must still run every one of them, with
// the same assertions.
//
// A package whose tests call Run has TestMain call Main; a package that
// starts its test binary as a child process (cmd/ahp-tap) uses Build.
package norace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Build builds the test binary of the package in the working directory
// (where go test runs a test binary) without the race detector, into dir,
// and returns its path. GOFLAGS cannot turn the race detector back on: the
// build says -race=false.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "norace.test")
	out, err := exec.Command("go", "test", "-race=false", "-c", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go test -race=false -c: %v\n%s", err, out)
	}
	return bin, nil
}

// binary is the one non-race build of this test process, made by the
// first Run that needs it and removed by Main.
var binary struct {
	once sync.Once
	main bool // Main runs the tests
	dir  string
	path string
	err  error
}

// Main runs the package's tests and then removes the non-race build Run
// made, if any. TestMain of a package whose tests call Run is
// `os.Exit(norace.Main(m))`.
func Main(m *testing.M) int {
	binary.main = true
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	return code
}

// Run runs the calling test (t.Name(), subtests included) in the non-race
// build of this test binary when this binary is race-built, and reports
// whether it did: the caller then returns, its outcome being the child's.
// Without the race detector Run returns false at once and the test runs
// here. Use it for tests that do not start goroutines of their own and do
// not exercise code that does: what the race detector could check there
// it would check in the package's other tests.
func Run(t *testing.T) bool {
	t.Helper()
	if !Race {
		return false
	}
	if !binary.main {
		t.Fatal("norace.Run: the package's TestMain must call norace.Main")
	}
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "norace")
		if binary.err == nil {
			binary.path, binary.err = Build(binary.dir)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	args := []string{"-test.run", runPattern(t.Name()), "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	out, err := exec.CommandContext(ctx, binary.path, args...).CombinedOutput()
	// The child's -test.v output holds its logs and the line that shows
	// how the test ended there (a pattern that matched nothing would pass
	// silently).
	switch {
	case err != nil:
		t.Fatalf("in the non-race build (%s %s): %v\n%s", binary.path, strings.Join(args, " "), err, out)
	case strings.Contains(string(out), "--- SKIP: "+t.Name()+" "):
		t.Skipf("skipped in the non-race build:\n%s", out)
	case !strings.Contains(string(out), "--- PASS: "+t.Name()+" "):
		t.Fatalf("the non-race build did not run %s:\n%s", t.Name(), out)
	case testing.Verbose():
		t.Logf("ran in the non-race build:\n%s", out)
	}
	return true
}

// runPattern is the -test.run pattern that selects exactly the test named
// name: one anchored, quoted pattern per level of subtests.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
