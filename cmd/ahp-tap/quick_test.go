//go:build !e2e

package main

// e2eTests: built without -tags e2e (the quick loop, go test -race
// ./...), the slow end-to-end cases skip (endToEnd).
const e2eTests = false
