#!/usr/bin/env bash
# bench/audited.sh: the share of frames ahp-tap audits (best-effort, default
# flags) at fixed offered loads, issue 10 item 3. Open loop: each request is
# sent when it falls due, whatever the answers do.
#   stdio: 1 KiB hooks/intercept requests at 1k, 5k and 20k intercepts/s
#          through `ahp-tap stdio --registration R --hook ID --log L` to a
#          minimal backend (bench/stdiobench -rate); frames not audited are
#          the TAP-1 counts in the log.
#   http:  1 KiB POSTs at 1k, 2k and 5k requests/s through
#          `ahp-tap http --upstream U --metrics M` to a loopback backend
#          (bench/httpload -rate, up to 256 keep-alive connections); frames
#          not audited are ahp_tap_audit_dropped_total + ahp_tap_audit_cut_total.
# A fresh tap for each row. Prints a Markdown table with the load average
# before each row and the tap's CPU time (user+sys) where it is measured.
#
#   bench/audited.sh                 # 10 s per row
#   DURATION=20 STDIO_RATES="5000" HTTP_RATES="2000" bench/audited.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DURATION:-10}
STDIO_RATES=${STDIO_RATES:-1000 5000 20000}
HTTP_RATES=${HTTP_RATES:-1000 2000 5000}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/ahp-tap" ./cmd/ahp-tap
go build -o "$work/stdiobench" ./bench/stdiobench
go build -o "$work/httpload" ./bench/httpload
cat >"$work/registration.json" <<'JSON'
{"protocolVersion":"draft","hooks":[{"id":"com.example.bench","transport":{"type":"stdio","command":"stdiobench","args":["-backend"],"lifecycle":"persistent"},
 "subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"metadata"}}]}]}
JSON
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(go version | cut -d' ' -f3), $DUR s per row"
echo "| transport | offered /s | achieved /s | p50 ms | p99 ms | frames | not audited | audited | tap CPU s | load average before |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for r in $STDIO_RATES; do
	l=$(load)
	/usr/bin/time -f '%U %S' -o "$work/cpu" "$work/stdiobench" -name stdio -rate "$r" -duration "${DUR}s" -format json -audit-log "$work/findings.jsonl" -- \
		"$work/ahp-tap" stdio --registration "$work/registration.json" --hook com.example.bench --log "$work/findings.jsonl" --summary=false -- \
		"$work/stdiobench" -backend >"$work/out.json"
	python3 - "$work/out.json" "$l" "$work/cpu" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
u, s = open(sys.argv[3]).read().split()[-2:]
aud = 100 - 100 * r["not_audited"] / max(r["frames"], 1)
print(f'| stdio | {r["offered_rps"]:.0f} | {r["achieved_rps"]:.0f} | {r["p50_ms"]:.2f} | {r["p99_ms"]:.2f} | {r["frames"]} | {r["not_audited"]} | {aud:.2f}% | {float(u)+float(s):.1f} (driver, tap and backend) | {sys.argv[2]} |')
PY
done
"$work/httpload" -backend 127.0.0.1:9841 &
pids+=($!)
for r in $HTTP_RATES; do
	"$work/ahp-tap" http --upstream http://127.0.0.1:9841 --listen 127.0.0.1:9842 --metrics 127.0.0.1:9843 2>"$work/tap.err" &
	tap=$!
	pids+=($tap)
	for _ in $(seq 50); do
		grep -q listening "$work/tap.err" 2>/dev/null && break
		sleep 0.1
	done
	l=$(load)
	cpu0=$(awk '{print $14+$15}' /proc/$tap/stat)
	"$work/httpload" -url http://127.0.0.1:9842/agent-hooks -rate "$r" -duration "${DUR}s" -metrics http://127.0.0.1:9843/metrics -format json >"$work/out.json"
	cpu=$(awk -v c0="$cpu0" '{printf "%.1f", ($14+$15-c0)/100}' /proc/$tap/stat)
	kill $tap
	wait $tap 2>/dev/null || true
	python3 - "$work/out.json" "$l" "$cpu" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
na = r["dropped"] + r["cut"]
print(f'| http | {r["offered_rps"]:.0f} | {r["achieved_rps"]:.0f} | {r["p50_ms"]:.2f} | {r["p99_ms"]:.2f} | {r["frames"]} | {na} | {r["audited"]:.2f}% | {sys.argv[3]} | {sys.argv[2]} |' + (f' {r["failed"]} failed: {r.get("first_error","")}' if r["failed"] else ''))
PY
done
