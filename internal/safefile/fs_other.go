//go:build unix && !linux

package safefile

// pseudoFS is false where kernel pseudo file systems cannot be told apart.
func pseudoFS(int) bool { return false }
