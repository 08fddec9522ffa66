#!/usr/bin/env bash
# bench/pacedcpu.sh: the CPU one request costs the HTTP tap at a fixed,
# paced load, this checkout against another (issue 27 goals 2 and 4: what
# the audit costs beside forwarding). A closed loop (budget.sh, http.sh)
# saturates the machine, so its audited share and its CPU per request
# move with whatever else runs; at a rate the tap keeps up with, every
# frame is audited and the CPU per request compares builds.
#
# Two taps (ahp-tap http --log, a registration with a 5 s deadline, as in
# budget.sh) front one backend (bench/httpload -backend): this checkout's
# and BASELINE's. In each round, bench/conns posts 1 KiB intercepts at
# RATE requests/s over 16 connections for DURATION seconds to one tap,
# then to the other, while bench/cpushare samples the tap's CPU: its
# forwarding threads and its nice-19 audit thread. The table gives the
# median over the rounds of each, in CPU microseconds per request, and of
# the audited share.
#
# Usage: BASELINE=DIR bench/pacedcpu.sh [ROUNDS] [RATE] [DURATION]
#        (defaults 5, 3000, 8; DIR a checkout, say
#        `git worktree add --detach /tmp/base main`)
set -euo pipefail
ROUNDS=${1:-5}
RATE=${2:-3000}
DUR=${3:-8}
BASELINE=${BASELINE:?set BASELINE to the checkout to compare with}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
bench_work paced
mkdir "$WORK/this" "$WORK/baseline"
(cd "$ROOT" && go build -o "$WORK/this/ahp-tap" ./cmd/ahp-tap && go build -o "$WORK/httpload" ./bench/httpload &&
	go build -o "$WORK/conns" ./bench/conns && go build -o "$WORK/cpushare" ./bench/cpushare)
(cd "$BASELINE" && go build -o "$WORK/baseline/ahp-tap" ./cmd/ahp-tap)

BACKEND_PORT=9831
declare -A PORT=([this]=9832 [baseline]=9833) METRICS=([this]=9834 [baseline]=9835)
"$WORK/httpload" -backend 127.0.0.1:$BACKEND_PORT &
PIDS+=($!)
for b in this baseline; do
	http_registration "${PORT[$b]}" >"$WORK/$b/registration.json"
	"$WORK/$b/ahp-tap" http --listen 127.0.0.1:"${PORT[$b]}" --upstream http://127.0.0.1:$BACKEND_PORT \
		--registration "$WORK/$b/registration.json" --hook com.example.bench --log "$WORK/$b/violations.log" \
		--metrics 127.0.0.1:"${METRICS[$b]}" 2>"$WORK/$b/stderr.log" &
	PIDS+=($!)
done
for p in $BACKEND_PORT "${PORT[@]}" "${METRICS[@]}"; do wait_port "$p"; done

counts() { # metrics port -> "requests dropped" so far
	curl -s "http://127.0.0.1:$1/metrics" | awk '/^ahp_tap_http_requests_total/ {r += $2} /^ahp_tap_audit_dropped_total/ {d = $2} END {print r + 0, d + 0}'
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $RATE requests/s over 16 connections, ${DUR}s, $ROUNDS rounds; baseline $(git -C "$BASELINE" rev-parse --short HEAD), this $(git -C "$ROOT" rev-parse --short HEAD)" >&2
for round in $(seq "$ROUNDS"); do
	for b in this baseline; do
		read -r req0 drop0 < <(counts "${METRICS[$b]}")
		"$WORK/cpushare" -o "$WORK/cs.json" -role relay="$WORK/$b/ahp-tap http" -nice audit=19 -- \
			"$WORK/conns" -url "http://127.0.0.1:${PORT[$b]}/agent-hooks" -active 16 -rate "$RATE" -duration "${DUR}s" >/dev/null 2>&1 || true
		read -r req1 drop1 < <(counts "${METRICS[$b]}")
		python3 - "$b" $((req1 - req0)) $((drop1 - drop0)) "$WORK/cs.json" <<'PY' >>"$WORK/rows"
import json, sys
build, n, dropped = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
roles = json.load(open(sys.argv[4]))["roles"]
fwd, aud = roles.get("relay", 0) / n * 1e6, roles.get("audit", 0) / n * 1e6
print(build, 100 * (1 - dropped / (2 * n)), fwd, aud, fwd + aud)
PY
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$WORK/rows" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    build, *vals = line.split()
    rows[build].append([float(v) for v in vals])
print("| build | audited (median) | forwarding µs/req | audit thread µs/req | tap µs/req | tap µs/req per round |")
print("|---|---:|---:|---:|---:|---|")
for build in ("this", "baseline"):
    med = lambda i: statistics.median(r[i] for r in rows[build])
    per = ", ".join(f"{r[3]:.0f}" for r in rows[build])
    print(f"| {build} | {med(0):.1f}% | {med(1):.1f} | {med(2):.1f} | {med(3):.1f} | {per} |")
PY
