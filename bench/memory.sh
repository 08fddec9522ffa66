#!/bin/sh
# Peak RSS of `ahp-tap stdio` with default flags for one 50 MB line each
# way (through cat). Usage: bench/memory.sh  (needs GNU time, python3).
# Reports GNU time's "Maximum resident set size" of the ahp-tap process
# (Linux: the largest of it and the descendants it waited for). The HTTP
# case of issue 10 (1,000 concurrent 16 MiB bodies) is not driven yet.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ahp-tap" ./cmd/ahp-tap
python3 -c "import sys; sys.stdout.write('{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"s\":\"'+'a'*50000000+'\"}}\n')" >"$tmp/big"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -v "$tmp/ahp-tap" stdio -- cat <"$tmp/big" 2>"$tmp/err" | cmp - "$tmp/big"
echo "stdio 50 MB line both ways, default flags: peak RSS $(awk -F: '/Maximum resident/{print $2}' "$tmp/err") KiB (bytes unchanged)"
