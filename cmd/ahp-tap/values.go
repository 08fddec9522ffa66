package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ahp-tap/ahp-tap/examples"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Flag values that parse but make no sense are refused here, each with exit
// 2 and a one-line reason, rather than silently replaced by a default.

// checkStdioValues checks the values of stdio's flags.
func checkStdioValues(sf *stdioFlags) error {
	switch {
	case sf.queue <= 0:
		return usageError("stdio: --audit-queue must be at least 1 frame, got %d", sf.queue)
	case sf.maxLine <= 0:
		return usageError("stdio: --max-audit-line must be at least 1 byte, got %d", sf.maxLine)
	}
	if sf.state != "" {
		// The state directory itself may be created, but not a whole
		// path: a typo must not silently make a tree of directories.
		parent := filepath.Dir(filepath.Clean(sf.state))
		if st, err := os.Stat(parent); err != nil || !st.IsDir() {
			return usageError("stdio: --state %s: the parent directory %s does not exist", sf.state, parent)
		}
	}
	return nil
}

// editContextKeys are the members --edit-context understands
// (rules.ParseEditContext).
var editContextKeys = []string{"event", "current", "mode", "action", "capabilities", "content", "requestedSchema"}

// checkEditContextKeys refuses a misspelt --edit-context member.
func checkEditContextKeys(v *tap.Value) error {
	for _, m := range v.Obj {
		if !slices.Contains(editContextKeys, m.Key) {
			return usageError("--edit-context has an unknown key %q (known: %s)", m.Key, strings.Join(editContextKeys, ", "))
		}
	}
	return nil
}

// checkExampleMode refuses an unknown example-backend mode.
func checkExampleMode(cmd, mode string) error {
	var names []string
	for _, m := range examples.Modes {
		if m.Name == mode {
			return nil
		}
		names = append(names, m.Name)
	}
	return usageError("%s: unknown --mode %q (one of %s)", cmd, mode, strings.Join(names, ", "))
}
