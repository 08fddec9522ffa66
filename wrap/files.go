package wrap

import (
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ahp-tap/ahp-tap/tap"
)

// ReadRegistration reads the registration file name (a regular file of at
// most 16 MiB; a byte order mark is dropped) and returns its bytes and
// its file info.
func ReadRegistration(name string) ([]byte, iofs.FileInfo, error) {
	// O_NONBLOCK: a FIFO without a writer is refused below instead of
	// blocking the open, where no signal would be seen (issue 28 item 16);
	// a regular file ignores it.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", name)
	}
	doc, err := ReadDocument(f)
	return doc, info, err
}

// maxRegistration bounds what wrap reads: registrations are small.
const maxRegistration = 16 << 20

// ReadDocument reads a registration from r: at most 16 MiB, a byte order
// mark dropped.
func ReadDocument(r io.Reader) ([]byte, error) {
	doc, err := io.ReadAll(io.LimitReader(r, maxRegistration+1))
	if err == nil && len(doc) > maxRegistration {
		return nil, fmt.Errorf("registration larger than %d bytes", maxRegistration)
	}
	// A byte order mark (RFC 8259 lets a parser ignore it) is dropped:
	// the document written is the same JSON without it.
	return tap.TrimBOM(doc), err
}

// SameFile reports whether the paths a and b name one file.
func SameFile(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// WriteRegistration writes doc to name by renaming a temporary file over
// it, so a harness never reads half a registration.
// The mode is the existing file's, else the input's without group or
// other write permission (0600 when the input was stdin). A symbolic link
// at name is refused rather than followed.
func WriteRegistration(name string, doc []byte, input iofs.FileInfo) error {
	mode := iofs.FileMode(0o600)
	if input != nil {
		mode = input.Mode().Perm() &^ 0o022
	}
	if st, err := os.Lstat(name); err == nil {
		if st.Mode()&iofs.ModeSymlink != 0 {
			return fmt.Errorf("-o %s is a symbolic link; give the file itself", name)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("-o %s is not a regular file", name)
		}
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(doc); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
