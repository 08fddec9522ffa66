package har

import (
	"os"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/norace"
)

// TestMain lets the cutter tests, which push 16 MiB strings through code
// that starts no goroutine, run without the race detector (norace.Run).
func TestMain(m *testing.M) { os.Exit(norace.Main(m)) }
