package tap

import (
	"os"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/norace"
)

// TestMain lets the tests that push hundreds of megabytes, or hundreds of
// thousands of members, through the engine's one goroutine run without
// the race detector (norace.Run).
func TestMain(m *testing.M) { os.Exit(norace.Main(m)) }
