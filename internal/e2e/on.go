//go:build e2e

package e2e

// Enabled: built with -tags e2e (CI's go test -race -tags e2e ./...), the
// slow cases run too.
const Enabled = true
