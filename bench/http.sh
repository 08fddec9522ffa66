#!/usr/bin/env bash
# HTTP benchmark: wrk posts a 1 KiB hooks/intercept body at 16 connections
#   1. directly to a minimal Go backend (bench/httpbackend),
#   2. through nginx as a reverse proxy (one worker, upstream keep-alive),
#   3. through mitmdump --mode reverse:...,
#   4. through Go's httputil.ReverseProxy with no audit (bench/httprp): what
#      net/http itself costs, for reference,
#   5. through ahp-tap http with every check on (rules.Default, a registration,
#      a violation log),
#   6. the same with a capture file as well (--capture),
#   7. through ahp-tap http --forward --log (wrk sends absolute-form requests,
#      as a harness with HTTP_PROXY does),
# all on loopback, one after the other, in one run. Prints a Markdown table
# with each row's ratio to nginx. Only rows of one run compare: the machine
# is shared, so absolute figures move from run to run.
#
# Usage: bench/http.sh [DURATION_SECONDS] [ROUNDS]   (defaults 5 and 3)
# BASELINE=DIR bench/http.sh adds a row for ahp-tap --log built from another
# checkout (say `git worktree add /tmp/base main`): before and after in one run.
# PROFILE=1 bench/http.sh also builds ahp-tap with -tags pprof and, after
# the rounds, takes a CPU profile and an allocation profile of the --log tap
# under the same load; it prints their top entries (files in $PROFILE_DIR,
# default /tmp/ahp-tap-http-profile).
# Each round runs every target once (2 s warm-up, then DURATION); the table
# gives the median over the rounds, so a burst of other load on the machine
# hits all targets alike instead of one.
# Installs wrk, nginx and mitmproxy with apt-get when they are missing.
set -euo pipefail

DUR=${1:-5}
ROUNDS=${2:-3}
CONNS=16
THREADS=2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_work http

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || need+=(nginx)
command -v mitmdump >/dev/null || need+=(mitmproxy)
if ((${#need[@]})); then
	echo "installing ${need[*]}" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

BACKEND_PORT=9801 NGINX_PORT=9802 MITM_PORT=9803 TAP_PORT=9804 RP_PORT=9805 TAPCAP_PORT=9806 FWD_PORT=9807 PPROF_PORT=9808
BASE_PORT=9809 METRICS_PORT=9810 METRICSCAP_PORT=9811 METRICSBASE_PORT=9812
BASELINE=${BASELINE:-}
PROFILE=${PROFILE:-0}
PROFILE_DIR=${PROFILE_DIR:-/tmp/ahp-tap-http-profile}
TAGS=()
[ "$PROFILE" = 1 ] && TAGS=(-tags pprof)

echo "building ahp-tap and the backend" >&2
(cd "$ROOT" && go build "${TAGS[@]}" -o "$WORK/ahp-tap" ./cmd/ahp-tap && go build -o "$WORK/httpbackend" ./bench/httpbackend && go build -o "$WORK/httprp" ./bench/httprp)
if [ -n "$BASELINE" ]; then
	(cd "$BASELINE" && go build -o "$WORK/ahp-tap-baseline" ./cmd/ahp-tap)
fi


"$WORK/httpbackend" -listen 127.0.0.1:$BACKEND_PORT &
PIDS+=($!)

nginx_conf "$WORK" $BACKEND_PORT $NGINX_PORT >"$WORK/nginx.conf"
nginx -c "$WORK/nginx.conf" -p "$WORK" &
PIDS+=($!)

mitmdump -q --mode "reverse:http://127.0.0.1:$BACKEND_PORT" --listen-host 127.0.0.1 --listen-port $MITM_PORT \
	--set connection_strategy=lazy >/dev/null 2>&1 &
PIDS+=($!)

"$WORK/httprp" -listen 127.0.0.1:$RP_PORT -upstream http://127.0.0.1:$BACKEND_PORT &
PIDS+=($!)

http_registration $TAP_PORT >"$WORK/registration.json"
AHP_TAP_PPROF=127.0.0.1:$PPROF_PORT "$WORK/ahp-tap" http --listen 127.0.0.1:$TAP_PORT --upstream http://127.0.0.1:$BACKEND_PORT \
	--registration "$WORK/registration.json" --hook com.example.bench \
	--log "$WORK/violations.log" --metrics 127.0.0.1:$METRICS_PORT 2>"$WORK/tap-stderr.log" &
TAP_PID=$!
PIDS+=($TAP_PID)
"$WORK/ahp-tap" http --listen 127.0.0.1:$TAPCAP_PORT --upstream http://127.0.0.1:$BACKEND_PORT \
	--registration "$WORK/registration.json" --hook com.example.bench \
	--log "$WORK/violations-cap.log" --capture "$WORK/session.capture" --metrics 127.0.0.1:$METRICSCAP_PORT 2>"$WORK/tapcap-stderr.log" &
TAPCAP_PID=$!
PIDS+=($TAPCAP_PID)
"$WORK/ahp-tap" http --forward --listen 127.0.0.1:$FWD_PORT \
	--registration "$WORK/registration.json" --hook com.example.bench \
	--log "$WORK/violations-fwd.log" 2>"$WORK/tapfwd-stderr.log" &
TAPFWD_PID=$!
PIDS+=($TAPFWD_PID)

TARGETS="direct nginx mitmdump go-httputil ahp-tap ahp-tap+capture ahp-tap-forward"
if [ -n "$BASELINE" ]; then
	"$WORK/ahp-tap-baseline" http --listen 127.0.0.1:$BASE_PORT --upstream http://127.0.0.1:$BACKEND_PORT \
		--registration "$WORK/registration.json" --hook com.example.bench \
		--log "$WORK/violations-base.log" --metrics 127.0.0.1:$METRICSBASE_PORT 2>"$WORK/tapbase-stderr.log" &
	PIDS+=($!)
	wait_port $BASE_PORT
	TARGETS="$TARGETS ahp-tap-baseline"
fi

for p in $BACKEND_PORT $NGINX_PORT $MITM_PORT $TAP_PORT $RP_PORT $TAPCAP_PORT $FWD_PORT; do wait_port $p; done

# The request: a conforming hooks/intercept for tool.before, padded to 1024
# bytes in tool.input; each request gets its own id (JSON-RPC id = event id).
post_lua >"$WORK/post.lua"

nonce() { date +%N | cut -c1-6; } # differs between wrk runs, so ids never repeat

run() { # name url round [path] -> appends "name rps p50 p99 errors" to $WORK/results
	local name=$1 url=$2 round=$3 path=${4:-/agent-hooks}
	wrk -t$THREADS -c$CONNS -d2s -s "$WORK/post.lua" "$url" -- "$(nonce)" "$path" >/dev/null 2>&1 || true
	wrk -t$THREADS -c$CONNS -d"${DUR}s" --latency -s "$WORK/post.lua" "$url" -- "$(nonce)" "$path" >"$WORK/$name.$round.wrk" 2>&1
	awk -v name="$name" '
		/^Requests\/sec/ {rps=$2}
		$1=="50%" {p50=$2}
		$1=="99%" {p99=$2}
		/Non-2xx|Socket errors/ {err=err $0 " "}
		END {print name, rps, ms(p50), ms(p99), err}
		function ms(v) { if (v ~ /us$/) return v/1000; if (v ~ /ms$/) return v+0; if (v ~ /s$/) return v*1000; return v }
	' "$WORK/$name.$round.wrk" >>"$WORK/results"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds of ${DUR}s per target at $CONNS connections" >&2
for round in $(seq "$ROUNDS"); do
	run direct http://127.0.0.1:$BACKEND_PORT "$round"
	run nginx http://127.0.0.1:$NGINX_PORT "$round"
	run mitmdump http://127.0.0.1:$MITM_PORT "$round"
	run go-httputil http://127.0.0.1:$RP_PORT "$round"
	run ahp-tap http://127.0.0.1:$TAP_PORT "$round"
	run ahp-tap+capture http://127.0.0.1:$TAPCAP_PORT "$round"
	run ahp-tap-forward http://127.0.0.1:$FWD_PORT "$round" "http://127.0.0.1:$BACKEND_PORT/agent-hooks"
	if [ -n "$BASELINE" ]; then run ahp-tap-baseline http://127.0.0.1:$BASE_PORT "$round"; fi
done

if [ "$PROFILE" = 1 ]; then
	mkdir -p "$PROFILE_DIR"
	echo "profiling the --log tap for ${DUR}s under the same load" >&2
	wrk -t$THREADS -c$CONNS -d"$((DUR + 2))s" -s "$WORK/post.lua" http://127.0.0.1:$TAP_PORT -- "$(nonce)" >/dev/null 2>&1 &
	WRK_PID=$!
	sleep 1
	curl -s -o "$PROFILE_DIR/cpu.pprof" "http://127.0.0.1:$PPROF_PORT/debug/pprof/profile?seconds=$DUR"
	curl -s -o "$PROFILE_DIR/allocs.pprof" "http://127.0.0.1:$PPROF_PORT/debug/pprof/allocs"
	wait $WRK_PID || true
	cp "$WORK/ahp-tap" "$PROFILE_DIR/ahp-tap"
fi

AUDITED=$(audited $METRICS_PORT)
AUDITEDCAP=$(audited $METRICSCAP_PORT)
AUDITEDBASE=
[ -n "$BASELINE" ] && AUDITEDBASE="; ahp-tap-baseline $(audited $METRICSBASE_PORT)"
kill -TERM $TAP_PID $TAPCAP_PID $TAPFWD_PID
wait $TAP_PID $TAPCAP_PID $TAPFWD_PID || true
findings=$(cat "$WORK/violations.log" "$WORK/violations-cap.log" "$WORK/violations-fwd.log" | wc -l | tr -d ' ')
frames=$(grep -c '"type":"frame"' "$WORK/session.capture" || true)

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
col() { awk -v n="$1" -v c="$2" '$1==n {print $c}' "$WORK/results" | median; }
echo
echo "| target | requests/s | vs nginx | p50 (ms) | p99 (ms) | p99 vs nginx | requests/s per round |"
echo "|---|---:|---:|---:|---:|---:|---|"
NGINX_RPS=$(col nginx 2)
NGINX_P99=$(col nginx 4)
for name in $TARGETS; do
	per=$(awk -v n="$name" '$1==n {printf "%s%.0f", sep, $2; sep=", "}' "$WORK/results")
	errs=$(awk -v n="$name" '$1==n && NF>4' "$WORK/results" | wc -l)
	note=""
	((errs > 0)) && note=" (errors in $errs rounds)"
	rps=$(col "$name" 2) p99=$(col "$name" 4)
	printf '| %s | %.0f | %.2fx | %.2f | %.2f | %.2fx | %s%s |\n' "$name" "$rps" "$(awk -v a="$rps" -v b="$NGINX_RPS" 'BEGIN{print a/b}')" \
		"$(col "$name" 3)" "$p99" "$(awk -v a="$p99" -v b="$NGINX_P99" 'BEGIN{print a/b}')" "$per" "$note"
done
echo
awk -v t="$(col ahp-tap 2)" -v n="$(col nginx 2)" -v m="$(col mitmdump 2)" -v g="$(col go-httputil 2)" -v tp="$(col ahp-tap 4)" -v np="$(col nginx 4)" 'BEGIN {
	printf "ahp-tap/nginx requests/s %.2fx (goal >= 0.7x); ahp-tap/mitmdump %.1fx (goal >= 20x); ahp-tap p99 / nginx p99 %.2fx (goal <= 2x); ahp-tap/go-httputil %.2fx\n", t/n, t/m, tp/np, t/g }'
echo "audited (every run of the target, warm-ups included): ahp-tap $AUDITED; ahp-tap+capture $AUDITEDCAP$AUDITEDBASE"
echo "ahp-tap+capture captured $frames frames; violation log lines (both taps): $findings; tap summaries:"
sed 's/^/    /' "$WORK/tap-stderr.log" "$WORK/tapcap-stderr.log" "$WORK/tapfwd-stderr.log" | tail -n 30
if [ "$findings" != 0 ]; then
	echo "first findings:"
	cat "$WORK/violations.log" "$WORK/violations-cap.log" "$WORK/violations-fwd.log" | head -n 3 | cut -c1-400
fi
if [ "$PROFILE" = 1 ]; then
	echo
	echo "CPU profile of the --log tap (top 25 by cumulative, then flat):"
	go tool pprof -top -cum -nodecount=25 "$PROFILE_DIR/ahp-tap" "$PROFILE_DIR/cpu.pprof" 2>/dev/null | sed 's/^/    /'
	go tool pprof -top -nodecount=25 "$PROFILE_DIR/ahp-tap" "$PROFILE_DIR/cpu.pprof" 2>/dev/null | sed 's/^/    /'
	echo "allocations (alloc_space, top 15):"
	go tool pprof -top -sample_index=alloc_space -nodecount=15 "$PROFILE_DIR/ahp-tap" "$PROFILE_DIR/allocs.pprof" 2>/dev/null | sed 's/^/    /'
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) CPUs, $(uname -sr), $(go version | awk '{print $3}'), wrk -t$THREADS -c$CONNS -d${DUR}s x $ROUNDS rounds, nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), mitmdump $(mitmdump --version 2>/dev/null | awk '/Mitmproxy/ {print $2}')"
