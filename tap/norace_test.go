//go:build !race

package tap

const raceEnabled = false
