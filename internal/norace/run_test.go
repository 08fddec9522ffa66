package norace

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// Under -race the body runs in the child, which is not race-built; were Run
// to return false there, or run nothing, the test would fail.
func TestRunLeavesTheRaceDetector(t *testing.T) {
	if Run(t) {
		return
	}
	if Race {
		t.Fatal("the body ran in the race-built binary")
	}
}

// Subtests with characters special to regular expressions run alone in
// the child too.
func TestRunSubtest(t *testing.T) {
	for _, name := range []string{"a+b (c)", "x.y"} {
		t.Run(name, func(t *testing.T) {
			if Run(t) {
				return
			}
			if Race {
				t.Fatal("the body ran in the race-built binary")
			}
		})
	}
}

func TestRunPatternSelectsExactlyTheTest(t *testing.T) {
	p := runPattern("TestA/a+b_(c)")
	want := `^TestA$/^a\+b_\(c\)$`
	if p != want {
		t.Fatalf("runPattern = %q, want %q", p, want)
	}
}
