package rules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// copySnapshot copies the shared draft schema directory into a temporary
// spec root laid out like shared/ahp, and returns the root.
func copySnapshot(t *testing.T) string {
	t.Helper()
	src := filepath.Join(sharedAHP, "schema/draft")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Skipf("no shared AHP snapshot: %v", err)
	}
	root := t.TempDir()
	dst := filepath.Join(root, "schema/draft")
	os.MkdirAll(dst, 0o700)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dst, e.Name()), data, 0o600)
	}
	return root
}

// addDocument lists path (sha256 empty: no check) in the manifest.
func addDocument(t *testing.T, root, path string) {
	t.Helper()
	mp := filepath.Join(root, "schema/draft/manifest.json")
	data, _ := os.ReadFile(mp)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	docs, _ := m["documents"].([]any)
	m["documents"] = append(docs, map[string]any{"path": path, "sha256": ""})
	data, _ = json.Marshal(m)
	os.WriteFile(mp, data, 0o600)
}

// TestSpecFilesAreConfinedToTheSpecDirectory: a manifest naming a file
// outside the spec directory (by .., an absolute path, or a link) or a file
// that is not regular is refused, never read (issue 8 item 10).
func TestSpecFilesAreConfinedToTheSpecDirectory(t *testing.T) {
	if _, err := LoadSpec(copySnapshot(t), "draft"); err != nil {
		t.Fatalf("LoadSpec(copy of the snapshot) = %v, want it to load", err)
	}
	for _, tc := range []struct {
		name  string
		setup func(root string)
		want  string
	}{
		{"dotdot", func(root string) { addDocument(t, root, "../../../../../../etc/passwd") }, "outside"},
		{"absolute", func(root string) { addDocument(t, root, "/etc/passwd") }, "outside"},
		{"link", func(root string) {
			os.Symlink("/etc/passwd", filepath.Join(root, "passwd"))
			addDocument(t, root, "passwd")
		}, "outside"},
		{"fifo", func(root string) {
			syscall.Mkfifo(filepath.Join(root, "schema/draft/extra.schema.json"), 0o600)
		}, "not a regular file"},
	} {
		root := copySnapshot(t)
		tc.setup(root)
		_, err := LoadSpec(root, "draft")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadSpec = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
