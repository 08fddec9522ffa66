package report

import (
	"os"
	"testing"
)

// TestMain ends the Chromium the browser tests share (dumpDOM).
func TestMain(m *testing.M) {
	code := m.Run()
	closePages()
	os.Exit(code)
}
