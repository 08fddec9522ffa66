#!/bin/sh
# Peak RSS of ahp-tap with default flags under the loads of issue 10 item 2.
# Usage: bench/memory.sh [stdio|http]...   (default: both; needs GNU time,
# python3)
#   stdio: one 50 MB line each way through `ahp-tap stdio -- cat`; GNU
#          time's "Maximum resident set size" of the ahp-tap process (Linux:
#          the largest of it and the descendants it waited for).
#   http:  1,000 concurrent clients each POST a 16 MiB hooks/intercept body
#          through `ahp-tap http --upstream ...` (default flags, plus
#          --metrics to read the audit counts) to a loopback backend that
#          streams and hashes every body (bench/httpload); once with
#          Content-Length, once chunked, a fresh tap for each. Every body is
#          verified against the backend's hash. Peak RSS is the tap's VmHWM
#          (/proc/PID/status) after the load.
# CLIENTS, SIZE and FRAMINGS override the HTTP load (defaults 1000,
# 16777216 and "content-length chunked").
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/ahp-tap" ./cmd/ahp-tap
go build -o "$tmp/httpload" ./bench/httpload
cases=${*:-stdio http}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

for c in $cases; do
	case $c in
	stdio)
		python3 -c "import sys; sys.stdout.write('{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"s\":\"'+'a'*50000000+'\"}}\n')" >"$tmp/big"
		/usr/bin/time -v "$tmp/ahp-tap" stdio -- cat <"$tmp/big" 2>"$tmp/err" | cmp - "$tmp/big"
		echo "stdio 50 MB line both ways, default flags: peak RSS $(awk -F: '/Maximum resident/{print $2}' "$tmp/err") KiB (bytes unchanged)"
		rm -f "$tmp/big"
		;;
	http)
		clients=${CLIENTS:-1000} size=${SIZE:-16777216}
		"$tmp/httpload" -backend 127.0.0.1:9821 &
		pids="$pids $!"
		for framing in ${FRAMINGS:-content-length chunked}; do
			"$tmp/ahp-tap" http --upstream http://127.0.0.1:9821 --listen 127.0.0.1:9822 --metrics 127.0.0.1:9823 2>"$tmp/tap.err" &
			tap=$!
			for _ in $(seq 50); do
				grep -q listening "$tmp/tap.err" 2>/dev/null && break
				sleep 0.1
			done
			flag=""
			[ "$framing" = chunked ] && flag=-chunked
			cpu0=$(awk '{print $14+$15}' /proc/$tap/stat)
			"$tmp/httpload" -url http://127.0.0.1:9822/agent-hooks -clients "$clients" -size "$size" $flag >"$tmp/out" || {
				cat "$tmp/out" "$tmp/tap.err"
				exit 1
			}
			cpu=$(awk -v c0="$cpu0" '{printf "%.1f", ($14+$15-c0)/100}' /proc/$tap/stat)
			hwm=$(awk '/VmHWM/{print $2}' /proc/$tap/status)
			m=$(curl -s http://127.0.0.1:9823/metrics | awk '/^ahp_tap_audit_(dropped|cut)_total /{printf "%s=%s ", substr($1,15), $2}')
			kill $tap
			wait $tap 2>/dev/null || true
			echo "http $clients concurrent × $size-byte bodies ($framing), default flags: peak RSS $hwm KiB; $(cat "$tmp/out"); tap CPU ${cpu} s; $m"
		done
		;;
	*)
		echo "bench/memory.sh: unknown case $c (stdio or http)" >&2
		exit 2
		;;
	esac
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
