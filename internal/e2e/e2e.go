// Package e2e tells tests whether the build has the e2e tag: the slow
// cases (whole-program runs, 50 MB bodies, a million frames) run in CI's
// `go test -race -tags e2e ./...` and skip in the quick loop, `go test
// -race ./...` (issue 27 goal 5). What a case asserts is the same in both;
// only whether it runs differs.
package e2e

import "testing"

// Only skips t unless the build has the e2e tag.
func Only(t testing.TB) {
	t.Helper()
	if !Enabled {
		t.Skip("a slow case left to go test -tags e2e (CI runs it)")
	}
}
