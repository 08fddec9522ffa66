// Package safefile opens the files ahp-tap writes on a user's behalf (the
// violation log, the capture, the --state directory) so that opening never
// blocks, never follows a planted symbolic link, and never leaves recorded
// traffic readable by others (issue 8, items 3 and 4).
package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// OpenAppend opens path for appending, creating it with mode 0600.
//
// It refuses a symbolic link at path, dangling or not (O_NOFOLLOW: appending
// to the target of a planted link turns recorded tool input into someone's
// shell rc file), and anything but a regular file: a FIFO is opened with
// O_NONBLOCK, so that a FIFO without a reader never blocks the caller, and
// then refused like a device or a directory. An existing file that its
// group or others may read or write is changed to 0600; notice then says
// so in one line for the caller to show. A file that cannot be changed
// (another user's) is refused.
func OpenAppend(path string) (f *os.File, notice string, err error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP):
			return nil, "", fmt.Errorf("%s is a symbolic link; ahp-tap does not follow links for the files it writes (give the real path)", path)
		case errors.Is(err, unix.ENXIO):
			return nil, "", fmt.Errorf("%s is not a regular file (a FIFO without a reader); give a regular file, or - for stderr", path)
		}
		return nil, "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, "", &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, "", fmt.Errorf("%s is not a regular file (%s); give a regular file, or - for stderr", path, kind(uint32(st.Mode)))
	}
	if pseudoFS(fd) {
		unix.Close(fd)
		return nil, "", fmt.Errorf("%s is not a regular file (a kernel interface under /proc or /sys); give a regular file, or - for stderr", path)
	}
	// A regular file never blocks; O_NONBLOCK only mattered for the open.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, "", &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	if perm := st.Mode & 0o777; perm&0o077 != 0 {
		if err := unix.Fchmod(fd, 0o600); err != nil {
			unix.Close(fd)
			return nil, "", fmt.Errorf("%s is accessible to others (mode %#o) and cannot be made 0600: %v", path, perm, err)
		}
		notice = fmt.Sprintf("%s was accessible to others (mode %#o); changed it to 0600", path, perm)
	}
	return os.NewFile(uintptr(fd), path), notice, nil
}

// kind names a file type for an error message.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return "not a regular file"
}

// CheckDir refuses a directory that every user may write to (the --state
// directory: another user could plant or replace the records other ahp-tap
// processes trust). A world-writable directory with the sticky bit (/tmp)
// is refused too: state belongs in a directory of its own.
func CheckDir(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", path)
	}
	if perm := st.Mode().Perm(); perm&0o002 != 0 {
		return fmt.Errorf("%s is writable by every user (mode %#o); use a directory of your own (chmod 700)", path, perm)
	}
	return nil
}

// Create opens path for writing from its start (a report, a baseline),
// creating it with mode 0600, with the guarantees of OpenAppend: it
// refuses a symbolic link at path and anything but a regular file (a FIFO
// is opened without blocking, then refused), and an existing file others
// may read or write is changed to 0600 (notice says so). The file is
// truncated only once it is known to be a regular file of ours.
func Create(path string) (f *os.File, notice string, err error) {
	fd, notice, err := openRegular(path, unix.O_WRONLY|unix.O_CREAT)
	if err != nil {
		return nil, "", err
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		unix.Close(fd)
		return nil, "", &os.PathError{Op: "truncate", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), notice, nil
}

// AppendExisting opens a file another program made for ahp-tap to append
// to (GITHUB_STEP_SUMMARY), creating it 0600 if it is missing: never
// through a symbolic link, never blocking on a FIFO, only a regular file.
// Its mode is left as its owner set it.
func AppendExisting(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, openError(path, err)
	}
	if err := checkRegular(fd, path); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openRegular opens path with flags (plus no-follow, non-blocking and
// close-on-exec), refuses anything but a regular file, switches the
// descriptor back to blocking, and makes the file 0600.
func openRegular(path string, flags int) (int, string, error) {
	fd, err := unix.Open(path, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, "", openError(path, err)
	}
	if err := checkRegular(fd, path); err != nil {
		unix.Close(fd)
		return -1, "", err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, "", &os.PathError{Op: "stat", Path: path, Err: err}
	}
	notice := ""
	if perm := st.Mode & 0o777; perm&0o077 != 0 {
		if err := unix.Fchmod(fd, 0o600); err != nil {
			unix.Close(fd)
			return -1, "", fmt.Errorf("%s is accessible to others (mode %#o) and cannot be made 0600: %v", path, perm, err)
		}
		notice = fmt.Sprintf("%s was accessible to others (mode %#o); changed it to 0600", path, perm)
	}
	return fd, notice, nil
}

func openError(path string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s is a symbolic link; ahp-tap does not follow links for the files it writes (give the real path)", path)
	case errors.Is(err, unix.ENXIO):
		return fmt.Errorf("%s is not a regular file (a FIFO without a reader); give a regular file", path)
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// checkRegular refuses an open descriptor that is not a regular file, and
// makes a regular one blocking again.
func checkRegular(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file (%s); give a regular file", path, kind(uint32(st.Mode)))
	}
	if pseudoFS(fd) {
		return fmt.Errorf("%s is not a regular file (a kernel interface under /proc or /sys); give a regular file", path)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return nil
}

// SameFile reports whether path names the same file as one of others
// (by device and inode, not by name: a hard link, a symlink or another
// spelling of an input is still the input), and which one. Paths that do
// not exist name no file.
func SameFile(path string, others []string) (string, bool) {
	st, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	for _, o := range others {
		if o == "" || o == "-" {
			continue
		}
		if ost, err := os.Stat(o); err == nil && os.SameFile(st, ost) {
			return o, true
		}
	}
	return "", false
}

// ReadSmall reads a small input file the user named (an --inject-plan):
// without following a symbolic link at path, refusing anything but a
// regular file, and at most max bytes (a larger file is an error).
func ReadSmall(path string, max int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link; ahp-tap does not follow it (give the real path)", path)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := checkRegular(fd, path); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}
