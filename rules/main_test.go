package rules

import (
	"os"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/norace"
)

// TestMain lets the schema mutation sweep and the tests that feed the
// engine documents or conversations far past its bounds run without the
// race detector (norace.Run): the rules run on the engine's one goroutine.
func TestMain(m *testing.M) { os.Exit(norace.Main(m)) }
