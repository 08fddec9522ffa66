#!/usr/bin/env bash
# Connections benchmark (issue 27 item 4): what many harness connections
# cost `ahp-tap http --upstream` with default flags.
#   1. IDLE keep-alive connections (default 10000), each having sent one
#      1 KiB hooks/intercept request, held open: the tap's RSS (VmRSS now,
#      VmHWM peak) once they are all idle.
#   2. ACTIVE connections (default 1000) posting 1 KiB hooks/intercept
#      bodies back to back for DURATION seconds: requests/s, and the frames
#      forwarded but not audited (the tap's ahp_tap_audit_dropped_total +
#      ahp_tap_audit_cut_total, and TAP-1 lines in its --log).
#   3. For each rate of RATES (requests/s, default "2000 4000 6000 8000"),
#      the same ACTIVE connections sending that many requests per second
#      between them on a fixed schedule, as a fleet of harnesses does: the
#      audited share at a given load. A closed loop (part 2) saturates two
#      cores whatever ACTIVE is, so it measures how forwarding and the
#      nice-19 audit share a machine with no CPU to spare, not what ACTIVE
#      connections cost. RATES="" skips this part.
# A fresh tap for each part; the backend is `httpload -backend`.
#
# Usage: IDLE=10000 ACTIVE=1000 DURATION=10 RATES="2000 4000" bench/conns.sh
set -euo pipefail

IDLE=${IDLE:-10000}
ACTIVE=${ACTIVE:-1000}
DURATION=${DURATION:-10}
RATES=${RATES-2000 4000 6000 8000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_work conns
BACKEND_PORT=${BACKEND_PORT:-9821} TAP_PORT=${TAP_PORT:-9822} METRICS_PORT=${METRICS_PORT:-9823}
ulimit -n "$(ulimit -Hn)"
need=$((IDLE + 100))
if (($(ulimit -n) < need)); then
	echo "conns.sh: the open-file limit $(ulimit -n) is below $need: lower IDLE" >&2
	exit 2
fi

(cd "$ROOT" && go build -o "$WORK/ahp-tap" ./cmd/ahp-tap && go build -o "$WORK/httpload" ./bench/httpload && go build -o "$WORK/conns" ./bench/conns)

"$WORK/httpload" -backend 127.0.0.1:$BACKEND_PORT &
PIDS+=($!)
wait_port $BACKEND_PORT

tap() { # log file -> starts a tap, sets TAP
	"$WORK/ahp-tap" http --listen 127.0.0.1:$TAP_PORT --upstream http://127.0.0.1:$BACKEND_PORT \
		--log "$1" --metrics 127.0.0.1:$METRICS_PORT 2>>"$WORK/tap-stderr.log" &
	TAP=$!
	PIDS+=($TAP)
	wait_port $TAP_PORT
	wait_port $METRICS_PORT
}
stop() {
	kill -TERM "$TAP"
	wait "$TAP" || true
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $(go version | awk '{print $3}')"
tap "$WORK/idle.log"
echo "tap at rest: $(awk '/^VmRSS/ {print $2, $3}' /proc/$TAP/status)"
"$WORK/conns" -url "http://127.0.0.1:$TAP_PORT/agent-hooks" -idle "$IDLE" -pid "$TAP" -metrics "http://127.0.0.1:$METRICS_PORT/metrics" || echo "(some connections failed)"
stop
echo "TAP-1 lines in the log: $(grep -c 'TAP-1' "$WORK/idle.log" || true)"

tap "$WORK/active.log"
"$WORK/conns" -url "http://127.0.0.1:$TAP_PORT/agent-hooks" -active "$ACTIVE" -duration "${DURATION}s" -metrics "http://127.0.0.1:$METRICS_PORT/metrics" || echo "(some connections failed)"
echo "tap peak: $(awk '/^VmHWM/ {print $2, $3}' /proc/$TAP/status)"
stop
echo "TAP-1 lines in the log: $(grep -c 'TAP-1' "$WORK/active.log" || true)"

for r in $RATES; do
	tap "$WORK/rate-$r.log"
	"$WORK/conns" -url "http://127.0.0.1:$TAP_PORT/agent-hooks" -active "$ACTIVE" -rate "$r" -duration "${DURATION}s" -metrics "http://127.0.0.1:$METRICS_PORT/metrics" || echo "(some connections failed)"
	stop
	echo "TAP-1 lines in the log: $(grep -c 'TAP-1' "$WORK/rate-$r.log" || true)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
