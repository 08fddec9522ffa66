package stdio

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/norace"
	"github.com/ahp-tap/ahp-tap/tap"
)

// The test binary doubles as the backends the tests wrap: with
// AHP_TAP_HELPER set it runs the named helper instead of the tests (the
// os/exec tests' pattern).
const helperEnv = "AHP_TAP_HELPER"

var helpers = map[string]func(args []string) int{
	// cat copies stdin to stdout and stderr-marks the end.
	"cat": func([]string) int {
		io.Copy(os.Stdout, os.Stdin)
		return 0
	},
	// exit exits with the status in args[0].
	"exit": func(args []string) int {
		n, _ := strconv.Atoi(args[0])
		return n
	},
	// selfkill writes args[0] (no newline) to stdout, then kills itself
	// with SIGKILL: a crash in the middle of a frame.
	"selfkill": func(args []string) int {
		os.Stdout.WriteString(args[0])
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	},
	// stderr writes args[0] to stderr and args[1] to stdout.
	"stderr": func(args []string) int {
		os.Stderr.WriteString(args[0])
		os.Stdout.WriteString(args[1])
		return 0
	},
	// banner prints a banner line, then answers every line with args[0].
	"banner": func(args []string) int {
		os.Stdout.WriteString("Policy backend v1.0 starting on stdio\n")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			os.Stdout.WriteString(args[0] + "\n")
		}
		return 0
	},
	// waiteof reads stdin to EOF, then says how many bytes it got.
	"waiteof": func([]string) int {
		n, _ := io.Copy(io.Discard, os.Stdin)
		fmt.Printf("got %d bytes then EOF\n", n)
		return 0
	},
	// trap prints "ready", then on SIGTERM prints "got SIGTERM" and exits 7.
	"trap": func([]string) int {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		fmt.Println("ready")
		s := <-c
		fmt.Printf("got %s\n", s)
		return 7
	},
	// stubborn ignores SIGTERM and prints "ready".
	"stubborn": func([]string) int {
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		select {}
	},
	// spawner starts a grandchild (sleeper) that shares its stdout, prints
	// the grandchild's pid, and exits 0 leaving it behind.
	"spawner": func([]string) int {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=sleeper")
		cmd.Stdout = os.Stdout
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%d\n", cmd.Process.Pid)
		return 0
	},
	// sleeper prints its pid and sleeps forever.
	"sleeper": func([]string) int {
		fmt.Printf("%d\n", os.Getpid())
		select {}
	},
	// store opens the state directory args[0] and stores, for the event
	// (args[1], args[2]), a record with digest args[3] and outcome args[4].
	"store": func(args []string) int {
		s, err := OpenDirStore(args[0], os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		s.Store(tap.EventKey{Source: args[1], ID: args[2]}, tap.EventRecord{Digest: args[3], Outcome: args[4]})
		return 0
	},
	// echoid answers every line that has an "id" with an empty result.
	// watchdog is ahp-tap's own __watchdog (Watchdog on stdin).
	"watchdog": func([]string) int { return Watchdog(os.Stdin) },
	"echoid": func([]string) int {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			var m struct{ ID json.RawMessage }
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil {
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"draft","effects":[]}}`+"\n", m.ID)
			}
		}
		return 0
	},
	// closein closes its stdin at once, prints "closed", then waits for
	// SIGTERM-free death by EOF of nothing: it sleeps until killed.
	"closein": func([]string) int {
		os.Stdin.Close()
		fmt.Println("closed")
		select {}
	},
}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		h, ok := helpers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "no helper %q\n", name)
			os.Exit(2)
		}
		os.Exit(h(os.Args[1:]))
	}
	norace.QuickExit() // race-built children: no 1 s sleep at exit
	os.Exit(m.Run())
}

// helperConfig is a Config running the named helper with args. The "cat"
// helper is the system's cat when there is one: the same real process
// behaviour (stdin to stdout until EOF, exit 0) without starting the
// race-instrumented test binary, which costs several times the CPU to start.
func helperConfig(name string, args ...string) Config {
	if name == "cat" && len(args) == 0 {
		if p, err := exec.LookPath("cat"); err == nil {
			return Config{Command: p, Env: os.Environ()}
		}
	}
	return Config{
		Command: os.Args[0],
		Args:    args,
		Env:     append(os.Environ(), helperEnv+"="+name),
	}
}
