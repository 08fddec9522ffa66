package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpandInputs(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.capture", "a.capture.gz", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	got, err := ExpandInputs([]string{"-", "x.jsonl", dir})
	want := []string{"-", "x.jsonl", filepath.Join(dir, "a.capture.gz"), filepath.Join(dir, "b.capture")}
	if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ExpandInputs = %q, %v; want %q", got, err, want)
	}
	if _, err := ExpandInputs([]string{empty}); err == nil || !strings.Contains(err.Error(), "is a directory with no capture in it") {
		t.Errorf("ExpandInputs(a directory without captures) = %v", err)
	}
}
