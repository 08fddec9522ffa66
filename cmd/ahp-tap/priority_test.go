//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threadSched returns, for every thread of pid, its scheduling policy and
// nice value (fields 41 and 19 of /proc/PID/task/TID/stat).
func threadSched(pid int) (policy, nice map[int]int) {
	policy, nice = map[int]int{}, map[int]int{}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", e.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // f[0] is field 3
		if len(f) < 39 {
			continue
		}
		policy[tid], _ = strconv.Atoi(f[41-3])
		nice[tid], _ = strconv.Atoi(f[19-3])
	}
	return policy, nice
}

// autogroupNice is the nice value of pid's autogroup (the scheduler's
// group of its session); ok is false without autogroups.
func autogroupNice(pid string) (nice int, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/autogroup") // "/autogroup-123 nice 5"
	f := strings.Fields(string(b))
	if err != nil || len(f) != 3 {
		return 0, false
	}
	nice, err = strconv.Atoi(f[2])
	return nice, err == nil
}

// TestStdioAuditPriorityOfTheAuditProcess checks the scheduling of every
// thread of the audit process: with --audit-priority idle all of them are
// SCHED_IDLE (the reader of the audit link and the Go runtime's threads
// too: one left at nice 0 keeps a CPU the harness, the tap or the backend
// wakes on for the rest of its slice); with low, the default, every thread
// is at nice 5 and none is SCHED_IDLE. The audit process's session, which the
// scheduler runs as a group of its own (autogroup), is at nice 19 with
// idle and, with low, at nice 5 while the audit keeps up (here: no
// traffic); an in-process audit leaves the harness's session alone.
func TestStdioAuditPriorityOfTheAuditProcess(t *testing.T) {
	t.Parallel()
	const schedIdle = 5
	const (
		allIdle  = iota // every thread SCHED_IDLE
		someIdle        // the audit's threads SCHED_IDLE, forwarding's not
		niced           // every thread at nice 5, none SCHED_IDLE
	)
	own, groups := autogroupNice("self")
	for _, tc := range []struct {
		name    string
		flags   []string
		want    int
		group   int  // the autogroup's nice
		inTapTo bool // the audit runs in the forwarding process
	}{
		{"default", nil, niced, 5, false},
		{"idle", []string{"--audit-priority=idle"}, allIdle, 19, false},
		{"low", []string{"--audit-priority=low"}, niced, 5, false},
		// Forwarding waits for this in-process audit: only the audit's
		// own thread may be SCHED_IDLE, never the forwarding loops'.
		{"idle, --audit complete", []string{"--audit=complete", "--audit-priority=idle"}, someIdle, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := tapCmd(append([]string{"--summary=false"}, tc.flags...), "sleeper")
			stdout, _ := cmd.StdoutPipe()
			stdin, _ := cmd.StdinPipe()
			defer stdin.Close()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			// The audit process lowers its priority once its rules are
			// loaded: wait for that (the test's deadline bounds the loop).
			var policy, nice map[int]int
			for i := 0; ; i++ {
				if i == 2000 {
					g, _ := autogroupNice(strconv.Itoa(cmd.Process.Pid))
					t.Fatalf("the audit process's threads never took the priority: policies %v, nice %v; the forwarding process's autogroup nice %d", policy, nice, g)
				}
				time.Sleep(10 * time.Millisecond)
				audit := auditProcesses(cmd.Process.Pid)
				if tc.inTapTo {
					audit = []int{cmd.Process.Pid}
				}
				if len(audit) != 1 {
					continue
				}
				if g, ok := autogroupNice(strconv.Itoa(audit[0])); groups && ok {
					want := tc.group
					if tc.inTapTo {
						want = own // the harness's session: untouched
					}
					if g != want {
						continue // set once the rules are loaded
					}
				}
				policy, nice = threadSched(audit[0])
				idle, nice5 := 0, 0
				for tid := range policy {
					if policy[tid] == schedIdle {
						idle++
					}
					if nice[tid] == 5 {
						nice5++
					}
				}
				switch {
				case tc.want == allIdle && idle > 0 && idle == len(policy):
					return
				case tc.want == someIdle && idle > 0:
					if idle == len(policy) {
						t.Fatalf("%v: every thread of the forwarding process is SCHED_IDLE: policies %v", tc.flags, policy)
					}
					return
				case tc.want == niced && nice5 > 0 && nice5 == len(policy):
					if idle != 0 {
						t.Fatalf("%v: %d of the audit process's threads are SCHED_IDLE: policies %v", tc.flags, idle, policy)
					}
					return
				}
			}
		})
	}
}
