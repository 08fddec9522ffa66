package auditlink

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSharedKey checks that taps configured alike meet at one key, and
// that another flag or another registration's bytes give another.
func TestSharedKey(t *testing.T) {
	reg := filepath.Join(t.TempDir(), "hooks.json")
	if err := os.WriteFile(reg, []byte(`{"hooks":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	key := func(flags []string) string {
		k, err := SharedKey("v1", flags, reg)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a := key([]string{"--state", "d"})
	if a != key([]string{"--state", "d"}) || len(a) != 16 {
		t.Fatalf("the same configuration gave keys %q and another", a)
	}
	if a == key([]string{"--state", "d", "--lifecycle", "per_event"}) {
		t.Error("another flag gave the same key")
	}
	if err := os.WriteFile(reg, []byte(`{"hooks":[{}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if a == key([]string{"--state", "d"}) {
		t.Error("another registration gave the same key")
	}
	if _, err := SharedKey("v1", nil, filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a registration that cannot be read gave a key")
	}
}
