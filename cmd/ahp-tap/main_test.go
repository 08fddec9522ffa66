package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"github.com/ahp-tap/ahp-tap/stdio"
)

// The test binary doubles as ahp-tap itself and as the backends it wraps
// (the os/exec tests' pattern): with AHP_TAP_MAIN=1 it runs main(), or,
// when its first argument is "helper", the named helper below (runChild).
const mainEnv = "AHP_TAP_MAIN"

var helpers = map[string]func(args []string) int{
	"cat": func([]string) int {
		io.Copy(os.Stdout, os.Stdin)
		return 0
	},
	"exit": func(args []string) int {
		n, _ := strconv.Atoi(args[0])
		return n
	},
	// signal kills itself with signal number args[0].
	"signal": func(args []string) int {
		n, _ := strconv.Atoi(args[0])
		stdio.DieOfSignal(syscall.Signal(n))
		return 1
	},
	// sleeper prints its pid and sleeps forever.
	"sleeper": func([]string) int {
		fmt.Printf("%d\n", os.Getpid())
		select {}
	},
	// trap prints "ready"; on SIGTERM it prints "got terminated" and exits 7.
	"trap": func([]string) int {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready")
		<-c
		fmt.Println("got terminated")
		return 7
	},
	// answer answers each line with args[0], per_event style when args[1]
	// is "once" (one line, then exit).
	"answer": func(args []string) int {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println(args[0])
			if len(args) > 1 && args[1] == "once" {
				return 0
			}
		}
		return 0
	},
}

// moreParallel runs more of this package's parallel tests at once than
// go test's default of GOMAXPROCS (2 on a 2-core machine), unless -parallel
// was given: they spend most of their time waiting on the processes they
// start (a backend's answer, a --drain, a deadline), not on the CPU. Tests
// that count global resources (fixed ports, the test process's children,
// the environment) do not call t.Parallel and run alone before them.
func moreParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(4, 2*runtime.GOMAXPROCS(0))))
	}
}

// runChild runs the test binary as ahp-tap or as a helper backend when the
// test that started it asked for that (AHP_TAP_MAIN=1), and then exits. It
// must be the first thing TestMain does, before flags are parsed.
func runChild() {
	if os.Getenv(mainEnv) != "1" {
		return
	}
	// A helper that starts a helper of its own starts this same binary
	// (TestMain, which sets childBinary in the test process, does not run).
	childBinary = os.Args[0]
	if len(os.Args) > 2 && os.Args[1] == "helper" {
		h, ok := helpers[os.Args[2]]
		if !ok {
			fmt.Fprintf(os.Stderr, "no helper %q\n", os.Args[2])
			os.Exit(2)
		}
		os.Exit(h(os.Args[3:]))
	}
	main()
	os.Exit(0)
}
