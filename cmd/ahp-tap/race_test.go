//go:build race

package main

// raceEnabled: the race detector multiplies memory use, so peak-RSS bounds
// are only asserted without it.
const raceEnabled = true
