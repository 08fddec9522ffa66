//go:build pprof

package main

// Built only with -tags pprof (bench/http.sh PROFILE=1): serves
// net/http/pprof at $AHP_TAP_PPROF so that a benchmark can profile the tap
// under load, and with $AHP_TAP_CPUPROFILE=PREFIX writes the CPU profile
// of the first $AHP_TAP_CPUPROFILE_SECONDS (default 5) of every ahp-tap
// process to PREFIX.PID (the stdio tap's audit process has no listener to
// ask). Release builds carry no profiling endpoint.

import (
	"fmt"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

func init() {
	if addr := os.Getenv("AHP_TAP_PPROF"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
	if prefix := os.Getenv("AHP_TAP_CPUPROFILE"); prefix != "" {
		secs, err := strconv.Atoi(os.Getenv("AHP_TAP_CPUPROFILE_SECONDS"))
		if err != nil || secs <= 0 {
			secs = 5
		}
		f, err := os.OpenFile(fmt.Sprintf("%s.%d", prefix, os.Getpid()), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil || pprof.StartCPUProfile(f) != nil {
			return
		}
		time.AfterFunc(time.Duration(secs)*time.Second, func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
}
