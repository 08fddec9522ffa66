package stdio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestWatchdogsAgree runs both watchdogs, the /bin/sh script a tap starts
// and ahp-tap's own __watchdog (where there is no /bin/sh), against a
// real process group: EOF without "done" (the tap died) kills the whole
// group, "done" leaves it alone, and a bad group id is exit 2 with
// nothing killed.
func TestWatchdogsAgree(t *testing.T) {
	t.Parallel()
	shell := ShellWatchdog()
	if shell == nil {
		t.Fatal("no /bin/sh on this machine: the shell watchdog is untested")
	}
	self := helperConfig("watchdog")
	watchdogs := map[string]func() *exec.Cmd{
		"sh":   func() *exec.Cmd { return exec.Command(shell[0], shell[1:]...) },
		"self": func() *exec.Cmd { c := exec.Command(self.Command); c.Env = self.Env; return c },
	}
	for name, newCmd := range watchdogs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tt := range []struct {
				name   string
				input  func(pgid int) string
				code   int
				killed bool
			}{
				{"the tap died", func(pgid int) string { return strconv.Itoa(pgid) + "\nnoise\n" }, 0, true},
				{"clean exit", func(pgid int) string { return strconv.Itoa(pgid) + "\ndone\n" }, 0, false},
				{"no group id", func(int) string { return "x\n" }, 2, false},
				{"group 1", func(int) string { return "1\n" }, 2, false},
				{"no newline", func(pgid int) string { return strconv.Itoa(pgid) }, 2, false},
			} {
				// A leader and two members, which print their pids.
				group := exec.Command("/bin/sh", "-c", "sleep 60 & echo $!; sleep 60 & echo $!; wait")
				group.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				out, err := group.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := group.Start(); err != nil {
					t.Fatal(err)
				}
				var members [2]int
				if _, err := fmt.Fscan(out, &members[0], &members[1]); err != nil {
					t.Fatal(err)
				}
				wd := newCmd()
				stdin, err := wd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := wd.Start(); err != nil {
					t.Fatal(err)
				}
				io.WriteString(stdin, tt.input(group.Process.Pid))
				stdin.Close()
				err = wd.Wait()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if code != tt.code {
					t.Errorf("%s: watchdog exit %d, want %d", tt.name, code, tt.code)
				}
				// The group's leader is this test's child: Wait says
				// whether SIGKILL took it. Not killed, it is killed here
				// (with its group) after a moment in which a watchdog that
				// wrongly killed would have.
				done := make(chan error, 1)
				go func() { done <- group.Wait() }()
				select {
				case err = <-done:
				case <-time.After(300 * time.Millisecond):
					syscall.Kill(-group.Process.Pid, syscall.SIGTERM)
					err = <-done
				}
				var gee *exec.ExitError
				errors.As(err, &gee)
				sig := syscall.Signal(0)
				if gee != nil {
					if ws, ok := gee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
						sig = ws.Signal()
					}
				}
				if killed := sig == syscall.SIGKILL; killed != tt.killed {
					t.Errorf("%s: group ended by %v, want killed %v", tt.name, sig, tt.killed)
				}
				if tt.killed {
					// Every member, not only the leader: each is gone or
					// a zombie (this machine's init may reap it late).
					for _, pid := range members {
						if !dies(pid) {
							t.Errorf("%s: member %d of the group still runs", tt.name, pid)
						}
					}
				}
			}
		})
	}
}

// dies reports whether process pid is gone or a zombie within 10 s.
func dies(pid int) bool {
	for range 1000 {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// The state follows the command name's closing parenthesis.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// TestWatchdogGetsNoEnvironment: the watchdog starts with an empty
// environment, so nothing the harness exported (a bash function named
// kill, where /bin/sh is bash) can change what the script does.
func TestWatchdogGetsNoEnvironment(t *testing.T) {
	t.Setenv("BASH_FUNC_kill%%", "() { :; }")
	t.Setenv("AHP_TAP_WATCHDOG_PROBE", "harness")
	out := filepath.Join(t.TempDir(), "env")
	disarm := startWatchdog([]string{"/bin/sh", "-c", `env > "$0.tmp" && mv "$0.tmp" "$0"; cat >/dev/null`, out}, 1<<30, io.Discard)
	defer disarm()
	var env []byte
	for range 1000 {
		var err error
		if env, err = os.ReadFile(out); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if env == nil {
		t.Fatal("the watchdog never ran")
	}
	for _, name := range []string{"AHP_TAP_WATCHDOG_PROBE", "BASH_FUNC_kill"} {
		if bytes.Contains(env, []byte(name)) {
			t.Errorf("the watchdog's environment has %s:\n%s", name, env)
		}
	}
}
