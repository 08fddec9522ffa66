//go:build pprof

package main

// Built only with -tags pprof (bench/http.sh PROFILE=1): serves
// net/http/pprof at $AHP_TAP_PPROF so that a benchmark can profile the tap
// under load. Release builds carry no profiling endpoint.

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("AHP_TAP_PPROF"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
