//go:build e2e

package main

// e2eTests: built with -tags e2e (CI's go test -race -tags e2e ./...),
// the slow end-to-end cases run too (endToEnd).
const e2eTests = true
