//go:build !race

package norace

// Race: this binary was built with the race detector.
const Race = false
