#!/usr/bin/env bash
# Engine benchmark beside a baseline (issue 27 item 1): builds the tap
# package's test binary from this checkout and from BASELINE (another
# checkout, say `git worktree add /tmp/base main`), then runs
# BenchmarkDecodeRules and BenchmarkDecode on one core (-cpu 1) REPS times,
# alternating the two, and prints per benchmark the median and the best
# frames per CPU-second (user + system time, getrusage) of each. On a
# shared machine CPU time is the steadier figure and the best run the one
# least disturbed; compare the two builds within one run only.
#
# Each build runs under every GOGC of GOGCS (default "100 400"): 100 is the
# Go default, 400 what the audit processes set (internal/gctune), so the
# second is the rate the audit of a running tap gets.
#
# Usage: BASELINE=/tmp/base REPS=5 bench/engine.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${REPS:-5}
# shellcheck source=bench/enginelib.sh
source "$ROOT/bench/enginelib.sh"
engine_bins engine
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $(go version | awk '{print $3}'); $REPS runs of 1 s each"
for _ in $(seq "$REPS"); do
	for g in ${GOGCS:-100 400}; do
	for b in "${bins[@]}"; do
		GOGC=$g "$b" -test.run '^$' -test.bench 'DecodeRules|Decode$' -test.benchtime 1s -test.cpu 1 -test.benchmem |
			awk -v b="$(basename "$b" .test),GOGC=$g" '/^Benchmark/ {for (i = 1; i <= NF; i++) {if ($(i+1) == "frames/cpu-s") r = $i; if ($(i+1) == "allocs/op") a = $i}; print $1, b, r, a}'
	done
	done
done >"$WORK/raw"
echo
echo "| benchmark | build | frames/cpu-s median | best | allocs/frame |"
echo "|---|---|---:|---:|---:|"
awk '{print $1, $2}' "$WORK/raw" | sort -u | while read -r name build; do
	awk -v n="$name" -v b="$build" '$1 == n && $2 == b {print $3}' "$WORK/raw" | sort -g |
		awk -v n="$name" -v b="$build" -v a="$(awk -v n="$name" -v b="$build" '$1 == n && $2 == b {print $4; exit}' "$WORK/raw")" \
			'{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "| %s | %s | %.0f | %.0f | %s |\n", n, b, m, v[NR], a}'
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
