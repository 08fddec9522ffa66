#!/usr/bin/env bash
# bench/schedtrace.sh: where the one-at-a-time tail of `ahp-tap stdio`
# goes (issue 27 goal 3). N 1 KiB intercepts one at a time through
# `ahp-tap stdio` with every check on (as bench/stdio.sh's "all checks")
# under the kernel's scheduler tracepoints (ftrace: sched_switch,
# sched_wakeup, fork and exec; needs root and /sys/kernel/tracing, no
# perf), then bench/schedtrace: how long the driver, the forwarding
# process and the backend waited for a CPU after each wake-up, and which
# process held the CPU in the waits longer than OVER.
#
#   N=5000 bench/schedtrace.sh                            # this tree
#   N=5000 BIN=/path/to/ahp-tap bench/schedtrace.sh -- --audit-priority=low
set -euo pipefail
N=${N:-5000}
T=/sys/kernel/tracing
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ "${1:-}" = "--" ] && shift
W=$(mktemp -d /tmp/ahp-tap-bench-schedtrace.XXXXXX)
cleanup() {
	echo 0 >"$T/tracing_on" 2>/dev/null || true
	echo >"$T/set_event" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
(cd "$ROOT" && go build -o "$W/ahp-tap" ./cmd/ahp-tap && go build -o "$W/stdiobench" ./bench/stdiobench && go build -o "$W/schedtrace" ./bench/schedtrace)
BIN=${BIN:-$W/ahp-tap}
cat >"$W/registration.json" <<'JSON'
{"protocolVersion":"draft","hooks":[{"id":"com.example.bench","transport":{"type":"stdio","command":"stdiobench","args":["-backend"],"lifecycle":"persistent"},
 "subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"metadata"}}]}]}
JSON
echo 0 >"$T/tracing_on"
echo >"$T/trace"
echo 65536 >"$T/buffer_size_kb"
echo 1 >"$T/options/record-tgid"
printf '%s\n' sched:sched_switch sched:sched_wakeup sched:sched_process_fork sched:sched_process_exec >"$T/set_event"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) before"
# The driver is this shell's child: schedtrace finds the rest by fork and exec.
echo 1 >"$T/tracing_on"
"$W/stdiobench" -name trace -latency-requests "$N" -throughput-requests 10 -format json -- \
	"$BIN" stdio --registration "$W/registration.json" --hook com.example.bench --log "$W/f.jsonl" --summary=false "$@" -- \
	"$W/stdiobench" -backend
echo 0 >"$T/tracing_on"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) after"
"$W/schedtrace" -root $$ <"$T/trace"
