#!/usr/bin/env bash
# bench/perevent.sh: wall time per event of a per_event stdio backend (one
# process per event, as a harness runs it): the backend alone, behind
# `ahp-tap stdio --audit=false`, and behind `ahp-tap stdio` auditing (the
# forwarding process starts an audit process per event and waits for it,
# bounded, before it exits). BASE=/path/to/ahp-tap adds a row for another
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

run() { # name, command...: n events, one process each; prints ms per event
	local name=$1; shift
	local start end
	start=$(date +%s%N)
	for _ in $(seq "$n"); do
		printf '%s\n' "$req" | "$@" > /dev/null
	done
	end=$(date +%s%N)
	awk -v n="$n" -v ns=$((end - start)) -v name="$name" 'BEGIN { printf "%-28s %8.2f ms/event\n", name, ns / n / 1e6 }'
}

echo "per_event: $n events per configuration, $(nproc) CPUs"
run "backend alone" "$work/backend"
run "ahp-tap --audit=false" "$work/ahp-tap" stdio --lifecycle per_event --audit=false --summary=false -- "$work/backend"
run "ahp-tap (audit process)" "$work/ahp-tap" stdio --lifecycle per_event --state "$work/state" --log "$work/log.jsonl" --capture "$work/cap.jsonl" --summary=false -- "$work/backend"
if [ -n "${BASE:-}" ]; then
	run "BASE ahp-tap (auditing)" "$BASE" stdio --lifecycle per_event --state "$work/state-base" --log "$work/log-base.jsonl" --capture "$work/cap-base.jsonl" --summary=false -- "$work/backend"
fi
echo "findings logged: $(wc -l < "$work/log.jsonl")"
