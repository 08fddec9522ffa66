#!/usr/bin/env bash
# bench/budget.sh: where the CPU of one request goes, per process (issue 27
# "Done when": what each relay costs on two cores, and what auditing adds).
#
# For stdio, stdiobench sends N 1 KiB intercepts at 32 in flight through
# socat and through ahp-tap stdio (every check on, a violation log), and for
# HTTP, wrk posts 1 KiB intercepts at 16 connections through nginx and
# through ahp-tap http --log (default flags) for D seconds. bench/cpushare
# samples the CPU time (user + system) of every process of the run by role
# (driver, backend, relay; ahp-tap's stdio audit process; the HTTP tap's
# nice-19 audit thread); the table gives CPU microseconds per request per
# role and their sum. A relay run is CPU-bound on this machine when the sum
# times the rate reaches the number of cores: then
#
#     requests/s ≤ cores / (CPU seconds per request, all processes)
#
# and the ceiling of a configuration follows from its own row. The audit's
# own share (ahp-tap's audit process, or its audit thread) is what auditing
# every frame costs beside forwarding.
#
# Usage: bench/budget.sh [N_STDIO_REQUESTS] [HTTP_SECONDS] [ROUNDS]
#        (defaults 100000, 5, 3; each configuration runs ROUNDS times,
#        interleaved, and the table gives the median of each cell)
set -euo pipefail
N=${1:-100000}
DUR=${2:-5}
ROUNDS=${3:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
WORK=$(mktemp -d /tmp/ahp-tap-bench-budget.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${KEEP:-}" ] && echo "kept $WORK" >&2 || rm -rf "$WORK"
}
trap cleanup EXIT
for tool in socat wrk nginx; do command -v $tool >/dev/null || { echo "bench/budget.sh needs $tool (apt-get install $tool)" >&2; exit 2; }; done

(cd "$ROOT" && go build -o "$WORK/ahp-tap" ./cmd/ahp-tap && go build -o "$WORK/stdiobench" ./bench/stdiobench &&
	go build -o "$WORK/httpbackend" ./bench/httpbackend && go build -o "$WORK/cpushare" ./bench/cpushare)
cd "$WORK"
results=$WORK/results # lines: config round role cpu_us_per_request
rates=$WORK/rates     # lines: config round requests_per_second

# record CONFIG ROUND REQUESTS RATE: the rate, and the CPU per request of
# each role of cs.json (what cpushare measured), into $rates and $results.
record() {
	echo "$1 $2 $4" >>"$rates"
	python3 - "$1" "$2" "$3" <<'PY' >>"$results"
import json, sys
config, rnd, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
roles = json.load(open("cs.json"))["roles"]
for role, cpu in roles.items():
    print(config.replace(" ", "_"), rnd, role, round(cpu / n * 1e6, 2))
PY
}

# stdio --------------------------------------------------------------------
cat >stdio-reg.json <<'JSON'
{"protocolVersion":"draft","hooks":[{"id":"com.example.bench","transport":{"type":"stdio","command":"stdiobench","args":["-backend"],"lifecycle":"persistent"},
 "subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"metadata"}}]}]}
JSON
stdio_run() { # config round relay-argv...
	local config=$1 round=$2
	shift 2
	# Roles match this run's binaries only (by their directory): other
	# processes on the machine may run ahp-tap too.
	./cpushare -o cs.json -role driver="$WORK/stdiobench -name" -role audit="$WORK/ahp-tap __audit-process" -role relay="$1" -role backend="$WORK/stdiobench -backend" -- \
		"$WORK/stdiobench" -name "$config" -latency-requests 10 -throughput-requests "$N" -format json -- "$@" >run.json
	record "$config" "$round" "$N" "$(sed 's/.*"throughput_rps":\([0-9.]*\).*/\1/' run.json)"
}

# http ---------------------------------------------------------------------
BACKEND_PORT=9821 NGINX_PORT=9822 TAP_PORT=9823 METRICS_PORT=9824
"$WORK/httpbackend" -listen 127.0.0.1:$BACKEND_PORT &
PIDS+=($!)
nginx_conf "$WORK" $BACKEND_PORT $NGINX_PORT >nginx.conf
nginx -c "$WORK/nginx.conf" -p "$WORK" &
PIDS+=($!)
http_registration $TAP_PORT >http-reg.json
"$WORK/ahp-tap" http --listen 127.0.0.1:$TAP_PORT --upstream http://127.0.0.1:$BACKEND_PORT \
	--registration http-reg.json --hook com.example.bench --log violations.log --metrics 127.0.0.1:$METRICS_PORT 2>tap-stderr.log &
PIDS+=($!)
post_lua >post.lua
for p in $BACKEND_PORT $NGINX_PORT $TAP_PORT; do wait_port $p; done
http_run() { # config round port
	local config=$1 round=$2 port=$3
	wrk -t2 -c16 -d1s -s post.lua "http://127.0.0.1:$port" -- "$(date +%N | cut -c1-6)" >/dev/null 2>&1 || true
	./cpushare -o cs.json -role driver='wrk -t2 -c16' -role backend="$WORK/httpbackend" -role relay="nginx -c $WORK" -role relay="nginx: worker" -role relay="$WORK/ahp-tap http" -nice audit=19 -- \
		wrk -t2 -c16 -d"${DUR}s" -s post.lua "http://127.0.0.1:$port" -- "$(date +%N | cut -c1-6)" >"wrk-$config-$round.out" 2>&1
	cp "wrk-$config-$round.out" wrk.out
	record "$config" "$round" "$(awk '/requests in/ {print $1}' wrk.out)" "$(awk '/^Requests\/sec/ {print $2}' wrk.out)"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; stdio $N requests at 32 in flight, http ${DUR}s at 16 connections; $ROUNDS rounds" >&2
for round in $(seq "$ROUNDS"); do
	stdio_run stdio-socat "$round" socat STDIO EXEC:"$WORK/stdiobench -backend"
	stdio_run stdio-ahp-tap "$round" "$WORK/ahp-tap" stdio --registration stdio-reg.json --hook com.example.bench --log stdio-violations.log --summary=false -- "$WORK/stdiobench" -backend
	http_run http-nginx "$round" $NGINX_PORT
	http_run http-ahp-tap "$round" $TAP_PORT
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
AUDITED=$(audited $METRICS_PORT)

python3 - "$results" "$rates" "$(nproc)" <<'PY'
import collections, statistics, sys
res, rates, cores = sys.argv[1], sys.argv[2], int(sys.argv[3])
cells = collections.defaultdict(list)   # (config, role) -> [us]
totals = collections.defaultdict(dict)  # config -> round -> us
for line in open(res):
    config, rnd, role, us = line.split()
    cells[(config, role)].append(float(us))
    totals[config][rnd] = totals[config].get(rnd, 0) + float(us)
rps = collections.defaultdict(list)
for line in open(rates):
    parts = line.split()
    rps[parts[0].replace(" ", "_")].append(float(parts[2]))
roles = ["driver", "backend", "relay", "audit"]
print("| configuration | requests/s | " + " | ".join(f"{r} µs/req" for r in roles) + " | all µs/req | ceiling at %d cores (req/s) |" % cores)
print("|---|---:|" + "---:|" * (len(roles) + 2))
for config in totals:
    med = lambda v: statistics.median(v) if v else 0
    row = [med(cells.get((config, r), [])) for r in roles]
    total = med(list(totals[config].values()))
    print(f"| {config} | {med(rps[config]):.0f} | " + " | ".join(f"{v:.1f}" for v in row) + f" | {total:.1f} | {cores / total * 1e6:.0f} |")
PY
echo
echo "# http-ahp-tap audited (every round, warm-ups included): $AUDITED"
grep -o '"check":"[A-Z0-9-]*"' stdio-violations.log 2>/dev/null | sort | uniq -c | sed 's/^/# stdio findings: /' || true
grep -o '"check":"[A-Z0-9-]*"' violations.log 2>/dev/null | sort | uniq -c | sed 's/^/# http findings: /' || true
