// Command cpushare measures where the CPU of a benchmark goes: it runs a
// command and, until it exits, samples the user+system CPU time of every
// process (and of every thread with a given nice value) whose command
// line matches a role, then prints the CPU-seconds of each role.
//
//	cpushare -role tap='ahp-tap stdio' -role audit='ahp-tap audit-worker' -- stdiobench …
//	cpushare -role forwarding='ahp-tap http' -nice audit=19 -- wrk …
//
// A role is NAME=SUBSTRING of the command line (NUL-separated arguments
// joined with spaces); the first role that matches a process takes it. A
// -nice NAME=N role takes the threads running at nice N out of the
// process role they belong to (the HTTP tap's audit thread runs at nice
// 19), so the two add up to the process. Processes that exit between two
// samples (every 100 ms) lose at most their last 100 ms; the benchmark
// processes run for seconds. Processes running before the command starts
// count only the CPU they use while it runs.
//
// The output is one JSON object: {"wall_s": …, "roles": {"tap": 1.23, …}},
// CPU-seconds per role, so a script can divide by the requests it counted.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type role struct{ name, match string }

type roles []role

func (r *roles) String() string { return fmt.Sprint(*r) }

func (r *roles) Set(s string) error {
	name, match, ok := strings.Cut(s, "=")
	if !ok || name == "" || match == "" {
		return fmt.Errorf("want NAME=SUBSTRING, got %q", s)
	}
	*r = append(*r, role{name, match})
	return nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTicks = 100

func main() {
	var procRoles, niceRoles roles
	flag.Var(&procRoles, "role", "`NAME=SUBSTRING`: processes whose command line contains SUBSTRING (repeatable)")
	flag.Var(&niceRoles, "nice", "`NAME=N`: threads at nice N of the matched processes (repeatable)")
	out := flag.String("o", "", "write the JSON to `FILE` instead of standard error")
	flag.Parse()
	if flag.NArg() == 0 || len(procRoles) == 0 {
		fmt.Fprintln(os.Stderr, "usage: cpushare -role NAME=SUBSTRING [-nice NAME=N] -- command args")
		os.Exit(2)
	}
	nices := map[int]string{}
	for _, r := range niceRoles {
		n, err := strconv.Atoi(r.match)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cpushare: -nice %s=%s: not a number\n", r.name, r.match)
			os.Exit(2)
		}
		nices[n] = r.name
	}
	s := sampler{procRoles: procRoles, nices: nices, last: map[string]float64{}}
	// Processes already running (an HTTP tap serving several benchmark
	// targets in turn) count only the CPU they use from here on.
	s.sample()
	s.base, s.last = s.last, map[string]float64{}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "cpushare:", err)
		os.Exit(1)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(100 * time.Millisecond)
	var err error
loop:
	for {
		s.sample()
		select {
		case err = <-done:
			break loop
		case <-tick.C:
		}
	}
	res := map[string]any{"wall_s": time.Since(start).Seconds(), "roles": s.totals()}
	b, _ := json.Marshal(res)
	if *out != "" {
		_ = os.WriteFile(*out, append(b, '\n'), 0o600)
	} else {
		fmt.Fprintln(os.Stderr, string(b))
	}
	if err != nil {
		os.Exit(1)
	}
}

// A sampler keeps the last CPU time seen of each thread, by
// "role/pid/tid": a thread's time only grows, so the last sample is its
// total (less what it used after it).
type sampler struct {
	procRoles roles
	nices     map[int]string
	last      map[string]float64
	base      map[string]float64 // the threads' times before the command started
	// roleOf caches each process's role ("" for none), so that a sample
	// reads the command line of new and matched processes only: the
	// sampler must not take the CPU it measures.
	roleOf map[string]string
}

func (s *sampler) sample() {
	if s.roleOf == nil {
		s.roleOf = map[string]string{}
	}
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range pids {
		// A matched process is looked at again: a child between its
		// fork and its exec has its parent's command line.
		name, seen := s.roleOf[p]
		if !seen || name != "" {
			name = s.role(p)
			s.roleOf[p] = name
		}
		if name == "" {
			continue
		}
		tids, _ := filepath.Glob(p + "/task/[0-9]*")
		for _, t := range tids {
			cpu, nice, ok := threadCPU(t + "/stat")
			if !ok {
				continue
			}
			r := name
			if n, ok := s.nices[nice]; ok {
				r = n
			}
			s.last[r+"/"+filepath.Base(p)+"/"+filepath.Base(t)] = cpu
		}
	}
}

// role is the role of process directory p, "" for none.
func (s *sampler) role(p string) string {
	cmdline, err := os.ReadFile(p + "/cmdline")
	if err != nil || len(cmdline) == 0 {
		return ""
	}
	line := string(bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '}))
	if strings.Contains(line, "cpushare") {
		return ""
	}
	for _, r := range s.procRoles {
		if strings.Contains(line, r.match) {
			return r.name
		}
	}
	return ""
}

// threadCPU reads utime+stime (seconds) and nice from a /proc stat file.
func threadCPU(path string) (cpu float64, nice int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) may hold spaces: split after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15, nice 19.
	if len(f) < 17 {
		return 0, 0, false
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	n, _ := strconv.Atoi(f[16])
	return (ut + st) / clockTicks, n, true
}

func (s *sampler) totals() map[string]float64 {
	out := map[string]float64{}
	for k, v := range s.last {
		out[k[:strings.IndexByte(k, '/')]] += v - s.base[k]
	}
	return out
}
