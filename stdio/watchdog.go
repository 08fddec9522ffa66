package stdio

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/ahp-tap/ahp-tap/internal/printable"
)

// The watchdog takes the backend's whole process group down when ahp-tap
// dies without a chance to clean up (SIGKILL, the OOM killer). The kernel's
// parent-death signal reaches only the backend itself (its direct child);
// processes the backend started would survive it (issue 8 item 10).
//
// The watchdog is a second, tiny process (a /bin/sh script, or this same
// binary's __watchdog where there is no /bin/sh) in a session of its own
// (so that a signal to the harness's process group does not take it down
// first), holding the read end of a pipe from the tap. When the tap exits
// normally it writes "done" and the watchdog ends; when the pipe reaches
// EOF without it, the tap died, and the watchdog sends SIGKILL to the
// backend's process group.
//
// Limits: a descendant that left the backend's process group (setsid,
// setpgid: daemons do) is out of reach, as only a cgroup could contain it;
// a tap killed in the instant between starting the backend and starting the
// watchdog is not covered; and a SIGKILL to the watchdog itself disarms it.

// watchdogScript is Watchdog for /bin/sh: the same protocol (the group id
// on the first line, then "done" or EOF), the same exit statuses (2 for a
// bad group id, else 0). A start of /bin/sh costs about a millisecond of
// CPU; a start of ahp-tap's own binary about 30 ms (its 220 package
// inits and ~900 page faults), and a per_event tap starts a watchdog per
// event (issue 27). kill, read and case are shell built-ins: no PATH.
const watchdogScript = `read -r pgid || exit 2
case $pgid in ""|*[!0-9]*) exit 2;; esac
[ "$pgid" -gt 1 ] 2>/dev/null || exit 2
while :; do
	read -r line; rc=$?
	[ "$line" = done ] && exit 0
	[ $rc -eq 0 ] || break
done
kill -s KILL -- "-$pgid" 2>/dev/null
exit 0`

// ShellWatchdog is the command line of the watchdog as a /bin/sh script,
// or nil where there is no /bin/sh (a distroless image): the tap then
// starts its own binary's __watchdog, which does the same.
func ShellWatchdog() []string {
	const sh = "/bin/sh"
	if fi, err := os.Stat(sh); err != nil || fi.Mode()&0o111 == 0 {
		return nil
	}
	return []string{sh, "-c", watchdogScript, "ahp-tap-watchdog"}
}

// startWatchdog starts argv as the watchdog of process group pgid and
// returns the function that disarms it at a clean exit.
func startWatchdog(argv []string, pgid int, diag io.Writer) (disarm func()) {
	r, w, err := os.Pipe()
	if err != nil {
		printable.Fprintf(diag, "ahp-tap: no watchdog (%v): if ahp-tap is killed, processes the backend started may survive\n", err)
		return func() {}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = r // stdout and stderr: /dev/null, never the harness's pipes
	// Nothing of the harness's environment: where /bin/sh is bash, a
	// function exported as kill or read (BASH_FUNC_kill%%) would replace
	// the built-in the script relies on.
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		printable.Fprintf(diag, "ahp-tap: no watchdog (%v): if ahp-tap is killed, processes the backend started may survive\n", err)
		return func() {}
	}
	fmt.Fprintf(w, "%d\n", pgid)
	go cmd.Wait() // reaped whenever it ends
	return func() {
		w.WriteString("done\n")
		w.Close()
	}
}

// Watchdog is the watchdog process's body: it reads the process group id
// from r, then waits for EOF. Without "done" before it, the tap died: the
// group is killed.
func Watchdog(r io.Reader) int {
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	pgid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil || pgid <= 1 {
		return 2
	}
	for {
		line, err := br.ReadString('\n')
		if strings.TrimSpace(line) == "done" {
			return 0
		}
		if err != nil {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return 0
		}
	}
}
