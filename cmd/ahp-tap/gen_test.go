package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// generators write the big inputs of the bounded-memory tests (gzip bombs,
// 40–60 MB captures): KIND -> func(path, args). They run in childBinary,
// without the race detector (generate), where writing them costs a
// fraction of the CPU it takes the race-instrumented test process.
var generators = map[string]func(path string, args []string) error{}

func init() {
	// gen KIND PATH ARGS...: write the input KIND to PATH.
	helpers["gen"] = func(args []string) int {
		g, ok := generators[args[0]]
		if !ok {
			fmt.Fprintf(os.Stderr, "no generator %q\n", args[0])
			return 2
		}
		if err := g(args[1], args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
}

// generate writes the input kind (generators) as name in a new temporary
// directory, in a childBinary process, and returns its path.
func generate(t *testing.T, name, kind string, args ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(childBinary, append([]string{"helper", "gen", kind, p}, args...)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generating %s (%s %q): %v\n%s", name, kind, args, err, out)
	}
	return p
}
