#!/usr/bin/env bash
# Instructions per exchange of the HTTP tap's audit side (issue 27 goal 2),
# a figure that a loaded machine does not move: BenchmarkAuditSide of the
# httpproxy package (this checkout's, and BASELINE's if set) under valgrind's
# cachegrind at two iteration counts, the difference in instructions
# retired divided by the difference in exchanges, as bench/engineinstr.sh
# does for the engine. "audit" is the audit goroutine's work on 1 KiB
# intercept exchanges with bench/http.sh's flags, plus making the exchanges
# off the clock; "make" is making them alone; "audit − make" is the audit
# side. The process's every thread counts, the collector's work included.
#
# A BASELINE checkout without the benchmark gets this checkout's file
# through a build overlay (nothing is written there).
#
# Usage: BASELINE=/tmp/base bench/auditinstr.sh   (GOGC=400 by default, as
# the tap runs; N1, N2 the two counts, multiples of the benchmark's
# 512-exchange batch; REPS runs each, default 3, builds alternated)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/enginelib.sh
source "$ROOT/bench/enginelib.sh" # irefs_per
N1=${N1:-2048}
N2=${N2:-10240}
REPS=${REPS:-3}
export GOGC=${GOGC:-400}
WORK=$(mktemp -d /tmp/ahp-tap-bench-auditinstr.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
(cd "$ROOT" && go test -c -o "$WORK/this.test" ./httpproxy)
bins=("$WORK/this.test")
if [ -n "${BASELINE:-}" ]; then
	overlay=()
	bench=httpproxy/auditside_bench_test.go
	if [ ! -e "$BASELINE/$bench" ]; then
		printf '{"Replace":{"%s":"%s"}}\n' "$BASELINE/$bench" "$ROOT/$bench" >"$WORK/overlay.json"
		overlay=(-overlay "$WORK/overlay.json")
	fi
	(cd "$BASELINE" && go test "${overlay[@]}" -c -o "$WORK/baseline.test" ./httpproxy)
	bins=("$WORK/baseline.test" "$WORK/this.test")
fi
echo "GOGC=$GOGC; $(go version | awk '{print $3}'); $N1 and $N2 exchanges, $REPS runs; load before $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$REPS"); do
	for b in "${bins[@]}"; do
		for sub in audit make; do
			echo "$sub $(basename "$b" .test) $(irefs_per "$b" "AuditSide/$sub\$")"
		done
	done
done >"$WORK/raw"
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo
echo "| build | audit + make, instructions/exchange | make | audit side (audit − make) | runs (audit; make) |"
echo "|---|---:|---:|---:|---|"
for b in "${bins[@]}"; do
	name=$(basename "$b" .test)
	a=$(awk -v b="$name" '$1 == "audit" && $2 == b {print $3}' "$WORK/raw")
	m=$(awk -v b="$name" '$1 == "make" && $2 == b {print $3}' "$WORK/raw")
	am=$(echo "$a" | median)
	mm=$(echo "$m" | median)
	echo "| $name | $am | $mm | $((am - mm)) | $(echo $a); $(echo $m) |"
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
