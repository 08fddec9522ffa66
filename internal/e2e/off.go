//go:build !e2e

package e2e

// Enabled: built without -tags e2e (the quick loop, go test -race ./...),
// the slow cases skip.
const Enabled = false
