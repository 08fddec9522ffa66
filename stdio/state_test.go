package stdio

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// storeIn runs the "store" helper as a separate process.
func storeIn(dir, source, id, digest, outcome string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], dir, source, id, digest, outcome)
	cmd.Env = append(os.Environ(), helperEnv+"=store")
	cmd.Stderr = os.Stderr
	return cmd
}

func TestDirStoreSharedAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := tap.EventKey{Source: "urn:uuid:1", ID: "evt_1"}
	if err := storeIn(dir, k.Source, k.ID, "first", "").Run(); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDirStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := s.Load(k)
	if !ok || r.Digest != "first" {
		t.Fatalf("Load() = %+v, %v; want the other process's record", r, ok)
	}
	if _, ok := s.Load(tap.EventKey{Source: "urn:uuid:2", ID: "evt_1"}); ok {
		t.Errorf("Load() of another source found a record")
	}
	// A later first sighting does not replace it; an outcome update does.
	if err := storeIn(dir, k.Source, k.ID, "second", "").Run(); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Load(k); r.Digest != "first" {
		t.Errorf("after a second first sighting Digest = %q, want %q", r.Digest, "first")
	}
	s.Store(k, tap.EventRecord{Digest: "first", Outcome: tap.OutcomeDeny})
	if r, _ := s.Load(k); r.Outcome != tap.OutcomeDeny {
		t.Errorf("after an update Outcome = %q, want %q", r.Outcome, tap.OutcomeDeny)
	}
	if fi, err := os.Stat(s.path(k)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

// TestDirStoreConcurrentStarts starts several processes that see the same
// event at once: exactly one record wins, whole, and no temporary file is
// left behind.
func TestDirStoreConcurrentStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for i := range 8 {
		c := storeIn(dir, "urn:x", "evt", "digest-"+strconv.Itoa(i), "")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := OpenDirStore(dir, nil)
	r, ok := s.Load(tap.EventKey{Source: "urn:x", ID: "evt"})
	if !ok || len(r.Digest) < len("digest-0") || r.Digest[:7] != "digest-" {
		t.Fatalf("Load() = %+v, %v; want one whole record", r, ok)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	all, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(all) != 1 {
		t.Errorf("state files = %v, want one", all)
	}
}

func TestDirStoreUnwritable(t *testing.T) {
	t.Parallel()
	if _, err := OpenDirStore("/proc/ahp-tap-state", nil); err == nil {
		t.Errorf("OpenDirStore(/proc/...) error = nil, want an error")
	}
}
