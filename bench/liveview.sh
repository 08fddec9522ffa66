#!/usr/bin/env bash
# Live view (--ui) cost: wrk posts a 1 KiB hooks/intercept at 16 connections
# through two ahp-tap http taps in front of bench/httpbackend, both with
# --log and --metrics, one also with --ui and a viewer (curl) reading its
# event stream, ROUNDS rounds of DURATION seconds each, alternating. Prints
# requests/s and p99 per tap (median over the rounds), the peak RSS
# (VmHWM) of each tap, the --ui tap's RSS sampled every 5 s during a final
# SOAK-second load (flat: the ring and the viewer's queue are bounded in
# bytes), and how many messages the viewer was told it skipped.
#
# Usage: bench/liveview.sh [DURATION_SECONDS] [ROUNDS] [SOAK_SECONDS]   (defaults 10, 3, 60)
set -euo pipefail
DUR=${1:-10}
ROUNDS=${2:-3}
SOAK=${3:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/ahp-tap-bench-ui.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
(cd "$ROOT" && go build -o "$WORK/ahp-tap" ./cmd/ahp-tap && go build -o "$WORK/httpbackend" ./bench/httpbackend)
B=9821 T1=9822 T2=9823 UI=9824 M1=9825 M2=9826
"$WORK/httpbackend" -listen 127.0.0.1:$B & PIDS+=($!)
"$WORK/ahp-tap" http --listen 127.0.0.1:$T1 --upstream http://127.0.0.1:$B --log "$WORK/v1.log" --metrics 127.0.0.1:$M1 2>"$WORK/t1.err" & T1PID=$!; PIDS+=($T1PID)
"$WORK/ahp-tap" http --listen 127.0.0.1:$T2 --upstream http://127.0.0.1:$B --log "$WORK/v2.log" --metrics 127.0.0.1:$M2 --ui 127.0.0.1:$UI 2>"$WORK/t2.err" & T2PID=$!; PIDS+=($T2PID)
for p in $B $T1 $T2 $UI; do for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done; done
curl -sN "http://127.0.0.1:$UI/events" >"$WORK/events" & PIDS+=($!)
cat >"$WORK/post.lua" <<'LUA'
local n = 0
function init(args) nonce = args[1] or "0" end
function request()
  n = n + 1
  local id = nonce .. "-" .. n .. "-" .. math.random(1e9)
  local b = '{"jsonrpc":"2.0","id":"' .. id .. '","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"' .. id ..
    '","source":"https://harness.example/bench","type":"tool.before","time":"2026-12-02T09:00:00Z","harness":{"name":"b","version":"1"},' ..
    '"session":{"id":"s"},"tool":{"name":"read_file","kind":"file_read","input":{"path":"README.md","note":"' .. string.rep("x", 600) ..
    '"},"origin":"native"},"call":{"id":"c-' .. id .. '"},"path":"example"},"capabilities":{"effects":["deny"]}}}'
  return wrk.format("POST", "/agent-hooks", {["Content-Type"] = "application/json"}, b)
end
LUA
run() { # name port round
	wrk -t2 -c16 -d"${DUR}s" --latency -s "$WORK/post.lua" "http://127.0.0.1:$2" -- "$(date +%N)" >"$WORK/$1.$3" 2>&1
	awk -v n="$1" '/^Requests\/sec/ {r=$2} $1=="99%" {p=$2} END {print n, r, p}' "$WORK/$1.$3" >>"$WORK/results"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$ROUNDS"); do run log $T1 "$r"; run log+ui $T2 "$r"; done
med() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
rss() { awk '/VmRSS/ {print int($2/1024)}' /proc/$1/status; }
hwm() { awk '/VmHWM/ {print int($2/1024)}' /proc/$1/status; }
echo "| tap | requests/s (median) | p99 | peak RSS MiB |"
echo "|---|---|---|---|"
for n in log log+ui; do
	pid=$T1PID; [ $n = log+ui ] && pid=$T2PID
	echo "| $n | $(awk -v n=$n '$1==n {print $2}' "$WORK/results" | med) | $(awk -v n=$n '$1==n {print $3}' "$WORK/results" | sort | sed -n 2p) | $(hwm $pid) |"
done
wrk -t2 -c16 -d"${SOAK}s" -s "$WORK/post.lua" "http://127.0.0.1:$T2" -- "$(date +%N)" >/dev/null 2>&1 &
W=$!
samples=""
for _ in $(seq $((SOAK / 5))); do sleep 5; samples="$samples $(rss $T2PID)"; done
wait $W || true
echo
echo "--ui tap RSS every 5 s under ${SOAK}s of load (MiB):$samples"
echo "viewer: $(grep -c '^data: ' "$WORK/events") messages received; last skipped count: $(grep -o '"t":"skipped","v":[0-9]*' "$WORK/events" | tail -1 | grep -o '[0-9]*$' || echo 0)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
