package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// jsonschemaInit is the Go runtime's inittrace line of the schema library:
// "init github.com/santhosh-tekuri/jsonschema/v6 @41 ms, 0.12 ms clock,
// 9512 bytes, 159 allocs".
var jsonschemaInit = regexp.MustCompile(`init github\.com/santhosh-tekuri/jsonschema/v6 @.*, (\d+) allocs`)

// TestStartCompilesNoSchema: a start of ahp-tap compiles no JSON Schema
// unless --spec asks for one. The library compiles every draft's
// meta-schemas in its init (21,278 allocations, 8.5 ms of a ~45 ms start,
// paid by each per-event tap and each of the tests' child processes);
// third_party/jsonschema defers that to the first compiler. The check
// reads the allocation count the runtime reports for the package's init,
// which does not depend on the machine's load, and that --spec still
// compiles and judges (check_test.go's TestCheckSpec covers findings).
func TestStartCompilesNoSchema(t *testing.T) {
	cmd := exec.Command(tapBinary, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ahp-tap version: %v\n%s", err, out)
	}
	m := jsonschemaInit.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no inittrace line for the schema library in:\n%s", out)
	}
	allocs, _ := strconv.Atoi(string(m[1]))
	// The package's variables alone take ~160 allocations; the eager
	// meta-schema compile takes over 20,000.
	if allocs > 2000 {
		t.Errorf("the schema library's init made %d allocations: a start compiles the meta-schemas again (see third_party/jsonschema/PATCHES.md)", allocs)
	}
}
