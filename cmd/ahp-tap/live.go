package main

import (
	"slices"

	"github.com/ahp-tap/ahp-tap/rules"

	"github.com/ahp-tap/ahp-tap/vocab"
)

// The output flags both live taps (stdio, http) share.

// consoleHelp is the help of --console.
const consoleHelp = "print findings as readable lines on stderr (\"ahp-tap ▸ …\"; colour on a terminal unless NO_COLOR is set)"

// summaryHelp is the help of --summary.
const summaryHelp = "print a summary on stderr at exit (default: when stderr is a terminal)"

// checkIDs lists every check ID of the default rules, once each.
func checkIDs() []string {
	var ids []string
	for _, r := range rules.Default(rules.Options{}) {
		if c := string(r.Info().Check); !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	for _, c := range []string{string(vocab.Tap1), string(vocab.Tap2)} {
		if !slices.Contains(ids, c) {
			ids = append(ids, c)
		}
	}
	return ids
}
