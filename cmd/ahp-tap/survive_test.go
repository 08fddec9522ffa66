package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/stdiotap"
)

func init() {
	// reply reads one line, waits args[0], prints args[1:] (one line
	// each), then sleeps until it is killed, as a persistent backend.
	helpers["reply"] = func(args []string) int {
		d, _ := time.ParseDuration(args[0])
		bufio.NewReader(os.Stdin).ReadString('\n')
		time.Sleep(d)
		for _, l := range args[1:] {
			fmt.Println(l)
		}
		select {}
	}
}

// auditProcesses returns the pids of audit processes serving the
// forwarding process pid.
func auditProcesses(pid int) []int {
	return processesRunning(func(cl []string) bool {
		return len(cl) > 3 && cl[1] == stdiotap.WorkerCommand && cl[3] == fmt.Sprintf("stdio:%d", pid)
	})
}

// processesRunning returns the pids of running processes whose command
// line (argv, from /proc) match accepts.
func processesRunning(match func(cmdline []string) bool) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var p int
		if _, err := fmt.Sscanf(e.Name(), "%d", &p); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if match(strings.Split(string(b), "\x00")) && running(p) {
			out = append(out, p)
		}
	}
	return out
}

// TestStdioAuditSurvivesSIGKILLOfTheGroup runs the tap the way the AHP
// SDK's stdio transport does (in a process group of its own), lets one
// faulty exchange through, and as soon as the harness has read the
// answer SIGKILLs the whole group, as the SDK does after a failed
// exchange. The audit process, in a session of its own, must still write
// that exchange's findings to the log and its frames, a `killed` note and
// the end record to the capture, and be gone within its bound.
func TestStdioAuditSurvivesSIGKILLOfTheGroup(t *testing.T) {
	req := intercept("e1", "ls")
	ok := `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`
	cases := []struct {
		name  string
		flags []string
		reply []string // delay, then lines
		want  []string // substrings of the log
		lines int      // lines the harness reads before the kill
	}{
		{"bad id", nil, []string{"0s", `{"jsonrpc":"2.0","id":"e2","result":{"protocolVersion":"draft","effects":[]}}`},
			[]string{`"check":"CORR-2","requirement":"AHP-RPC-001","rule":"CORR-2/answered-once","pointer":"/id","seq":2`, `matches no request`}, 1},
		{"banner on stdout", nil, []string{"0s", "policy backend v1 ready", ok},
			[]string{`"check":"STDIO-1"`, `policy backend v1 ready`}, 2},
		{"late answer", []string{"--timeout", "100ms"}, []string{"300ms", ok},
			[]string{`"check":"CORR-3"`, `"level":"warn"`, `"eventId":"e1"`}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "c.jsonl")
			argv := append([]string{"stdio", "--lifecycle", "persistent", "--log", logPath, "--capture", capPath}, tc.flags...)
			argv = append(argv, "--", childBinary, "helper", "reply")
			cmd := exec.Command(tapBinary, append(argv, tc.reply...)...)
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as the SDK starts a backend
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			if _, err := stdin.Write([]byte(req + "\n")); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(stdout)
			for range tc.lines {
				if _, err := br.ReadString('\n'); err != nil {
					t.Fatalf("reading the answer: %v", err)
				}
			}
			workers := auditProcesses(pid)
			if len(workers) != 1 {
				t.Errorf("audit processes of %d: %v, want one", pid, workers)
			}
			syscall.Kill(-pid, syscall.SIGKILL) // the whole group, at once
			cmd.Wait()
			if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Errorf("the forwarding process ended %v, want killed by SIGKILL (it shares the harness's fate)", cmd.ProcessState)
			}
			// The audit process exits within its bound (stdiotap.Bound) of
			// the link's end; this loop only waits that long.
			deadline := time.Now().Add(stdiotap.Bound + 2*time.Second)
			for len(auditProcesses(pid)) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("audit process %v still runs %v after the kill", auditProcesses(pid), stdiotap.Bound+2*time.Second)
				}
				time.Sleep(10 * time.Millisecond)
			}
			logData, _ := os.ReadFile(logPath)
			for _, w := range tc.want {
				if !strings.Contains(string(logData), w) {
					t.Errorf("log lacks %s:\n%s", w, logData)
				}
			}
			if strings.Contains(string(logData), `never answered before the stream ended`) {
				t.Errorf("a request the harness abandoned by the kill is reported as never answered:\n%s", logData)
			}
			capData, _ := os.ReadFile(capPath)
			c := string(capData)
			lines := strings.Split(strings.TrimSpace(c), "\n")
			if !strings.Contains(c, `"kind":"killed"`) || !strings.Contains(lines[len(lines)-1], `"kind":"end"`) {
				t.Errorf("capture lacks the killed note or the end record:\n%s", c)
			}
			if !strings.Contains(c, `"direction":"backend"`) || strings.Count(c, `"type":"frame"`) < 1+tc.lines {
				t.Errorf("capture lacks the exchange's frames:\n%s", c)
			}
		})
	}
}
