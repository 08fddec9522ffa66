#!/usr/bin/env bash
# bench/perevent.sh: wall time per event of a per_event stdio backend (one
# process per event, as a harness runs it): the backend alone, behind
# `ahp-tap stdio --audit=false`, behind `ahp-tap stdio` auditing with an
# audit process per event (--shared-audit=false: the forwarding process
# starts one and waits for it, bounded, before it exits), and behind
# `ahp-tap stdio` auditing in the audit process shared by the taps of the
# --state directory (the default). BASE=/path/to/ahp-tap adds a row for another
# build (an earlier commit, say). BENCHMARKS.md ("per_event start-up")
# records a run.
#
#   bench/perevent.sh               # 100 events per configuration
#   N=300 BASE=/tmp/old-ahp-tap bench/perevent.sh
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-100}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ahp-tap" ./cmd/ahp-tap

req='{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"},"session":{"id":"s1"},"tool":{"name":"Bash","kind":"shell","origin":"native","input":{"command":"ls"}},"call":{"id":"c1"},"path":"native"},"capabilities":{"effects":["deny"]}}}'
cat > "$work/backend" <<'SH'
#!/bin/sh
read -r line
echo '{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}'
SH
chmod +x "$work/backend"

# childcpu sets cpu to the CPU time (user+sys, ms) of the reaped children of this shell.
# (times runs in this shell, not in a $(...) subshell, which has no children.)
childcpu() {
	times > "$work/times"
	cpu=$(tail -1 "$work/times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t += a[1] * 60000 + a[2] * 1000 }; printf "%d", t }')
}

run() { # name, command...: n events, one process each; prints ms per event (wall, and CPU of the processes it started)
	local name=$1; shift
	local start end c0 c1
	childcpu; c0=$cpu
	start=$(date +%s%N)
	for _ in $(seq "$n"); do
		printf '%s\n' "$req" | "$@" > /dev/null
	done
	end=$(date +%s%N)
	childcpu; c1=$cpu
	awk -v n="$n" -v ns=$((end - start)) -v cpu=$((c1 - c0)) -v name="$name" 'BEGIN { printf "%-28s %8.2f ms/event wall %8.2f ms/event CPU\n", name, ns / n / 1e6, cpu / n }'
}

echo "per_event: $n events per configuration, $(nproc) CPUs"
run "backend alone" "$work/backend"
run "ahp-tap --audit=false" "$work/ahp-tap" stdio --lifecycle per_event --audit=false --summary=false -- "$work/backend"
run "ahp-tap (audit per event)" "$work/ahp-tap" stdio --lifecycle per_event --shared-audit=false --state "$work/state" --log "$work/log.jsonl" --capture "$work/cap.jsonl" --summary=false -- "$work/backend"
run "ahp-tap (shared audit)" "$work/ahp-tap" stdio --lifecycle per_event --state "$work/state-shared" --log "$work/log-shared.jsonl" --capture "$work/cap-shared.jsonl" --summary=false -- "$work/backend"
if [ -n "${BASE:-}" ]; then
	run "BASE ahp-tap (auditing)" "$BASE" stdio --lifecycle per_event --state "$work/state-base" --log "$work/log-base.jsonl" --capture "$work/cap-base.jsonl" --summary=false -- "$work/backend"
fi
echo "findings logged: $(wc -l < "$work/log.jsonl") per event process, $(wc -l < "$work/log-shared.jsonl") shared"
# The shared audit process is no child of this shell: its CPU time is read
# from /proc while it idles (it exits 2 s after its last link).
for pid in $(sed -n 's/.* shared audit process \([0-9]*\) started for .*/\1/p' "$work"/state-shared/audit-*.err); do
	if [ -r "/proc/$pid/stat" ]; then
		awk -v n="$n" -v hz="$(getconf CLK_TCK)" -v pid="$pid" '{ printf "shared audit process %s: %.2f ms CPU in all (%.2f ms/event)\n", pid, ($14 + $15) * 1000 / hz, ($14 + $15) * 1000 / hz / n }' "/proc/$pid/stat"
	else
		echo "shared audit process $pid: gone before its CPU time was read"
	fi
done
sleep 3 # the shared audit process exits 2 s after its last link, before $work goes
