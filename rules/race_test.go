//go:build race

package rules

// raceEnabled: the race detector slows the engine about tenfold, so the
// long-conversation tests run fewer exchanges under it.
const raceEnabled = true
