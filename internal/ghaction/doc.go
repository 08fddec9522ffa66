// Package ghaction holds the test of the repository's GitHub Action
// (action.yml at the root): it runs the composite action's steps the way
// the Actions runner does, so the action cannot rot while the command it
// wraps changes.
package ghaction
