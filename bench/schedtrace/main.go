// Command schedtrace reads an ftrace text trace of sched_switch,
// sched_wakeup, sched_process_fork and sched_process_exec (with
// options/record-tgid) taken around one bench/stdiobench run started by
// the process -root, and says where the one-at-a-time tail goes: for the
// driver, the forwarding process and the backend, how long each wake-up
// waited for its CPU, and which process held that CPU when the wait was
// longer than -over. bench/schedtrace.sh takes the trace.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	event = regexp.MustCompile(`^\s*(.+?)-(\d+)\s+\(\s*(?:\d+|-+)\)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+):\s+(.*)$`)
	swtch = regexp.MustCompile(`prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)`)
	wake  = regexp.MustCompile(` pid=(\d+) prio=\d+ target_cpu=(\d+)`)
	fork  = regexp.MustCompile(` pid=(\d+) child_comm=.* child_pid=(\d+)`)
	exec_ = regexp.MustCompile(`filename=(\S+) pid=(\d+)`)
)

func main() {
	root := flag.Int("root", 0, "pid of the process that started the driver")
	over := flag.Duration("over", 30*time.Microsecond, "wake-up waits longer than this are attributed to the CPU's holder")
	flag.Parse()
	role := map[int]string{} // thread id -> driver, forwarder, backend, audit
	comm := map[int]string{}
	cur := map[int]int{} // CPU -> thread running
	type pending struct {
		at     float64
		holder string
	}
	woken := map[int]pending{}
	waits := map[string][]float64{}
	blame := map[[2]string]float64{}
	blameN := map[[2]string]int{}
	cpu := map[string]float64{}
	since := map[int]float64{}
	who := func(tid int) string {
		if tid == 0 {
			return "idle"
		}
		if r, ok := role[tid]; ok {
			return r
		}
		return "other: " + comm[tid]
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		m := event.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		tid, _ := strconv.Atoi(m[2])
		c, _ := strconv.Atoi(m[3])
		ts, _ := strconv.ParseFloat(m[4], 64)
		comm[tid] = m[1]
		rest := m[6]
		switch m[5] {
		case "sched_process_fork":
			f := fork.FindStringSubmatch(rest)
			p, _ := strconv.Atoi(f[1])
			ch, _ := strconv.Atoi(f[2])
			if p == *root {
				role[ch] = "starting"
			} else if r, ok := role[p]; ok {
				role[ch] = r // a thread, or a child before its exec
			}
		case "sched_process_exec":
			f := exec_.FindStringSubmatch(rest)
			p, _ := strconv.Atoi(f[2])
			file := f[1][strings.LastIndexByte(f[1], '/')+1:]
			switch r := role[p]; {
			case r == "starting" && file == "stdiobench":
				role[p] = "driver"
			case r == "driver" && strings.HasPrefix(file, "ahp-tap"):
				role[p] = "forwarder"
			case r == "forwarder" && strings.HasPrefix(file, "ahp-tap"):
				role[p] = "audit"
			case r == "forwarder":
				role[p] = "backend"
			}
		case "sched_wakeup":
			f := wake.FindStringSubmatch(rest)
			p, _ := strconv.Atoi(f[1])
			t, _ := strconv.Atoi(f[2])
			woken[p] = pending{ts, who(cur[t])}
		case "sched_switch":
			f := swtch.FindStringSubmatch(rest)
			prev, _ := strconv.Atoi(f[1])
			next, _ := strconv.Atoi(f[3])
			if s, ok := since[prev]; ok {
				cpu[who(prev)] += ts - s
				delete(since, prev)
			}
			since[next] = ts
			cur[c] = next
			if w, ok := woken[next]; ok {
				delete(woken, next)
				r, d := who(next), ts-w.at
				waits[r] = append(waits[r], d)
				if (r == "driver" || r == "forwarder" || r == "backend") && d > over.Seconds() {
					k := [2]string{r, w.holder}
					blame[k] += d
					blameN[k]++
				}
			}
		}
	}
	us := func(s float64) string { return fmt.Sprintf("%.0f", s*1e6) }
	fmt.Println("| process | wake-ups | wait p50 µs | wait p99 µs | waits over", *over, "| CPU ms |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range []string{"driver", "forwarder", "backend", "audit"} {
		w := waits[r]
		sort.Float64s(w)
		n, longer := len(w), 0
		if n == 0 {
			continue
		}
		for _, d := range w {
			if d > over.Seconds() {
				longer++
			}
		}
		fmt.Printf("| %s | %d | %s | %s | %d | %.0f |\n", r, n, us(w[n/2]), us(w[n*99/100]), longer, cpu[r]*1e3)
	}
	fmt.Println()
	fmt.Println("| woken | CPU held by | waits over", *over, "| total ms | mean µs |")
	fmt.Println("|---|---|---|---|---|")
	keys := make([][2]string, 0, len(blame))
	for k := range blame {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return blame[keys[i]] > blame[keys[j]] })
	for _, k := range keys {
		if len(keys) > 12 && blameN[k] < 5 {
			continue
		}
		fmt.Printf("| %s | %s | %d | %.1f | %s |\n", k[0], k[1], blameN[k], blame[k]*1e3, us(blame[k]/float64(blameN[k])))
	}
}
