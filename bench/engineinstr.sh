#!/usr/bin/env bash
# Instructions per frame of the engine (issue 27 item 1), a figure that a
# loaded machine does not move: BenchmarkDecodeRules of this checkout (and
# of BASELINE, another checkout, if set) run at two fixed iteration counts
# under valgrind's cachegrind, and the difference in instructions retired
# divided by the difference in frames. The difference cancels what does not
# scale with the frames (start-up, building the benchmark's traffic, the
# warm-up pass). For machines without hardware counters (`perf stat -e
# instructions:u` says "not supported" in most VMs); where perf works, the
# same two counts under perf give the same kind of figure.
#
# Go's cputicks uses RDTSCP, which valgrind 3.19 cannot run: the runtime is
# told to do without it (GODEBUG=cpu.rdtscp=off), which changes no code that
# the benchmark measures.
#
# The garbage collector's background work depends on timing, so a figure
# moves by a few percent from run to run: each is the median of REPS runs
# (default 3), builds alternated.
#
# Usage: BASELINE=/tmp/base bench/engineinstr.sh   (GOGC=400 by default;
# N1, N2 the two counts, multiples of the benchmark's 512-frame cycle)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N1=${N1:-5120}
N2=${N2:-25600}
REPS=${REPS:-3}
export GOGC=${GOGC:-400}
# shellcheck source=bench/enginelib.sh
source "$ROOT/bench/enginelib.sh"
engine_bins engineinstr
echo "GOGC=$GOGC; $(go version | awk '{print $3}'); $N1 and $N2 frames, $REPS runs; load before $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$REPS"); do
	for bench in mix requests-1KiB; do
		for b in "${bins[@]}"; do
			echo "DecodeRules/$bench $(basename "$b" .test) $(irefs_per "$b" "DecodeRules/$bench\$")"
		done
	done
done >"$WORK/raw"
echo
echo "| benchmark | build | instructions/frame, median | runs |"
echo "|---|---|---:|---|"
awk '{print $1, $2}' "$WORK/raw" | sort -u | while read -r name build; do
	runs=$(awk -v n="$name" -v b="$build" '$1 == n && $2 == b {print $3}' "$WORK/raw" | sort -n)
	echo "| $name | $build | $(echo "$runs" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}') | $(echo $runs) |"
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
