package safefile

import "golang.org/x/sys/unix"

// pseudoFS reports whether fd is on a kernel pseudo file system (/proc,
// /sys…), whose files look regular but are kernel interfaces: ahp-tap
// never writes records to them, nor changes their mode.
func pseudoFS(fd int) bool {
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil {
		return false
	}
	switch st.Type {
	case unix.PROC_SUPER_MAGIC, unix.SYSFS_MAGIC, unix.DEBUGFS_MAGIC, unix.SECURITYFS_MAGIC,
		unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC, unix.TRACEFS_MAGIC, unix.BPF_FS_MAGIC:
		return true
	}
	return false
}
