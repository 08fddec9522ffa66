#!/usr/bin/env bash
# Wake-ups per frame of `ahp-tap stdio`'s two processes (issue 27 item 3):
# N 1 KiB intercepts one at a time (bench/stdiobench -inflight 1) through
# `ahp-tap stdio` with every check on, as bench/stdio.sh's "all checks";
# the voluntary and involuntary context switches of every thread of the
# forwarding process and of the audit process are sampled from
# /proc/PID/task/*/status every 20 ms, and the largest sum of each is
# divided by the frames (threads that exit take their counts with them,
# so the last samples can be lower).
#
# Usage: N=30000 bench/wakeups.sh
set -euo pipefail
N=${N:-30000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/ahp-tap-bench-wakeups.XXXXXX)
trap 'rm -rf "$W"' EXIT
(cd "$ROOT" && go build -o "$W/ahp-tap" ./cmd/ahp-tap && go build -o "$W/stdiobench" ./bench/stdiobench)
cat >"$W/registration.json" <<'JSON'
{"protocolVersion":"draft","hooks":[{"id":"com.example.bench","transport":{"type":"stdio","command":"stdiobench","args":["-backend"],"lifecycle":"persistent"},
 "subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"metadata"}}]}]}
JSON
(
	pids=""
	for _ in $(seq 400); do
		pids=$(pgrep -f "^$W/ahp-tap" | tr '\n' ' ' || true)
		[ "$(echo "$pids" | wc -w)" -ge 2 ] && break
		sleep 0.02
	done
	while sleep 0.02; do
		for p in $pids; do
			[ -d /proc/"$p" ] || continue
			v=0 n=0
			for t in /proc/"$p"/task/*/status; do
				while read -r k val _; do
					case $k in
					voluntary_ctxt_switches:) v=$((v + val)) ;;
					nonvoluntary_ctxt_switches:) n=$((n + val)) ;;
					esac
				done <"$t" 2>/dev/null || true
			done
			# field 6 of stat is the session: the audit process leads its own
			sid=$(awk '{print $6}' /proc/"$p"/stat 2>/dev/null) || continue
			echo "$p $sid $v $n"
		done
	done >"$W/samples" 2>/dev/null
) 2>/dev/null &
S=$!
"$W/stdiobench" -name wakeups -latency-requests "$N" -throughput-requests 10 -inflight 1 -size 1024 -format json -- \
	"$W/ahp-tap" stdio --registration "$W/registration.json" --hook com.example.bench --log "$W/f.jsonl" --summary=false -- \
	"$W/stdiobench" -backend >"$W/res.json"
sleep 0.3
kill $S 2>/dev/null || true
wait $S 2>/dev/null || true
frames=$(grep -o '"latency_frames":[0-9]*' "$W/res.json" | cut -d: -f2)
frames=$((frames + 20))
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $frames frames one request at a time"
awk '{print $1}' "$W/samples" | sort -u | while read -r p; do
	sort -k3 -n <(awk -v p="$p" '$1 == p' "$W/samples") | tail -1 | awk -v f="$frames" '{
		role = ($1 == $2) ? "audit process" : "forwarding process"
		printf "%-19s %8d voluntary %8d involuntary: %.3f wake-ups per frame\n", role, $3, $4, $3 / f }'
done
