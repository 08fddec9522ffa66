//go:build race

package tap

// raceEnabled: under the race detector sync.Pool drops items at random,
// so allocation counts that rely on the decoder's pooled tape do not hold.
const raceEnabled = true
