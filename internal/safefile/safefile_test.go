package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenAppendRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "bashrc")
	if err := os.WriteFile(target, []byte("# rc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "log.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if f, _, err := OpenAppend(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		f.Close()
		t.Errorf("OpenAppend(link to a file) = %v, want a symbolic link error", err)
	}
	if data, _ := os.ReadFile(target); string(data) != "# rc\n" {
		t.Errorf("target changed to %q", data)
	}
	dangling := filepath.Join(dir, "dangling")
	missing := filepath.Join(dir, "created-by-link")
	if err := os.Symlink(missing, dangling); err != nil {
		t.Fatal(err)
	}
	if f, _, err := OpenAppend(dangling); err == nil {
		f.Close()
		t.Errorf("OpenAppend(dangling link) succeeded, want an error")
	}
	if _, err := os.Lstat(missing); err == nil {
		t.Errorf("a dangling link created its target %s", missing)
	}
}

func TestOpenAppendNeverBlocksOnAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		f, _, err := OpenAppend(fifo)
		if err == nil {
			f.Close()
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("OpenAppend(FIFO) = %v, want a not-a-regular-file error", err)
		}
	case <-time.After(30 * time.Second):
		// Only a hang gets here: the old open(2) without O_NONBLOCK.
		t.Fatal("OpenAppend(FIFO without reader) blocked")
	}
	// With a reader, the FIFO opens but is still refused.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if f, _, err := OpenAppend(fifo); err == nil || !strings.Contains(err.Error(), "FIFO") {
		f.Close()
		t.Errorf("OpenAppend(FIFO with reader) = %v, want a FIFO error", err)
	}
	if f, _, err := OpenAppend("/dev/null"); err == nil || !strings.Contains(err.Error(), "character device") {
		f.Close()
		t.Errorf("OpenAppend(/dev/null) = %v, want a character device error", err)
	}
}

func TestOpenAppendMode(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	fresh := filepath.Join(dir, "new")
	f, notice, err := OpenAppend(fresh)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o600 || notice != "" {
		t.Errorf("new file mode = %v, notice %q; want 0600 and no notice", st.Mode().Perm(), notice)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, notice, err = OpenAppend(open)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("y\n")
	f.Close()
	if st, _ := os.Stat(open); st.Mode().Perm() != 0o600 {
		t.Errorf("0644 file left at %v, want 0600", st.Mode().Perm())
	}
	if !strings.Contains(notice, "changed it to 0600") {
		t.Errorf("notice = %q, want it to say the mode was changed", notice)
	}
	if data, _ := os.ReadFile(open); string(data) != "x\ny\n" {
		t.Errorf("appended file = %q", data)
	}
}

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	ww := filepath.Join(dir, "ww")
	os.Mkdir(ww, 0o700)
	os.Chmod(ww, 0o1777)
	if err := CheckDir(ww); err == nil || !strings.Contains(err.Error(), "writable by every user") {
		t.Errorf("CheckDir(world-writable) = %v, want refusal", err)
	}
	own := filepath.Join(dir, "own")
	os.Mkdir(own, 0o700)
	if err := CheckDir(own); err != nil {
		t.Errorf("CheckDir(0700) = %v, want nil", err)
	}
}

// TestOpenAppendRefusesKernelFiles: /proc files look regular; they are
// refused, and their mode is never changed (as root it could be).
func TestOpenAppendRefusesKernelFiles(t *testing.T) {
	before, err := os.Stat("/proc/version")
	if err != nil {
		t.Skip("no /proc/version")
	}
	if f, _, err := OpenAppend("/proc/version"); err == nil {
		f.Close()
		t.Errorf("OpenAppend(/proc/version) succeeded, want a refusal")
	}
	if after, _ := os.Stat("/proc/version"); after.Mode() != before.Mode() {
		os.Chmod("/proc/version", before.Mode().Perm())
		t.Errorf("/proc/version mode changed from %v to %v", before.Mode(), after.Mode())
	}
}

// TestCreate checks the report/baseline opener: a regular file is
// truncated and made 0600 (with a notice when it was wider); a symlink, a
// FIFO (without blocking) and a directory are refused, and nothing is
// truncated through them.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.sarif")
	os.WriteFile(p, []byte("old contents"), 0o644)
	os.Chmod(p, 0o644)
	f, notice, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	f.Close()
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("contents %q, want the old ones truncated", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 || !strings.Contains(notice, "changed it to 0600") {
		t.Errorf("mode %v, notice %q; want 0600 and a notice", fi.Mode().Perm(), notice)
	}
	if _, notice, err := Create(filepath.Join(dir, "fresh")); err != nil || notice != "" {
		t.Errorf("a new file: %v %q", err, notice)
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	if _, _, err := Create(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a symlink: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the symlink's target was truncated: %q", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		if _, _, err := Create(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a FIFO: %v", err)
		}
		if _, err := AppendExisting(fifo); err == nil {
			t.Error("AppendExisting opened a FIFO")
		}
	}
	if _, _, err := Create(dir); err == nil {
		t.Error("a directory was opened")
	}
	if _, err := AppendExisting(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("AppendExisting through a symlink: %v", err)
	}
	summary := filepath.Join(dir, "summary.md")
	os.WriteFile(summary, []byte("a\n"), 0o644)
	os.Chmod(summary, 0o644)
	g, err := AppendExisting(summary)
	if err != nil {
		t.Fatal(err)
	}
	g.WriteString("b\n")
	g.Close()
	if b, _ := os.ReadFile(summary); string(b) != "a\nb\n" {
		t.Errorf("appended %q", b)
	}
	if fi, _ := os.Stat(summary); fi.Mode().Perm() != 0o644 {
		t.Errorf("AppendExisting changed the owner's mode to %v", fi.Mode().Perm())
	}
}

// TestSameFile checks that an output is matched to an input by device and
// inode, not by name.
func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.WriteFile(in, []byte("x"), 0o600)
	hard := filepath.Join(dir, "hard")
	if err := os.Link(in, hard); err != nil {
		t.Skip(err)
	}
	if same, ok := SameFile(hard, []string{"", "-", filepath.Join(dir, "other"), in}); !ok || same != in {
		t.Errorf("hard link: %q %v", same, ok)
	}
	if _, ok := SameFile(filepath.Join(dir, ".", "in"), []string{in}); !ok {
		t.Error("another spelling of the path is not the same file")
	}
	other := filepath.Join(dir, "other")
	os.WriteFile(other, []byte("x"), 0o600)
	if _, ok := SameFile(other, []string{in}); ok {
		t.Error("two files with equal contents are the same file")
	}
	if _, ok := SameFile(filepath.Join(dir, "missing"), []string{in}); ok {
		t.Error("a missing path is a file")
	}
}
