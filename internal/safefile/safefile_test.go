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
