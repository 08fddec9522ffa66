#!/usr/bin/env bash
# bench/dupkeys.sh: the audit cost of hostile duplicate keys (issue 8 item 6).
# Builds ahp-tap, writes two requests and checks each, printing CPU time and
# peak RSS (GNU time):
#   flat: a 2.3 MB request whose params hold 200,000 members named "x"
#   deep: 100,000 duplicates 3,000 objects down (a pointer per duplicate
#         used to cost the full depth: quadratic)
#   bench/dupkeys.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ahp-tap" ./cmd/ahp-tap
python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
head = '{"jsonrpc":"2.0","id":"1","method":"hooks/intercept","params":{"protocolVersion":"draft",'
open(w + '/flat.jsonl', 'w').write(head + ','.join('"x":1' for _ in range(200000)) + ',"pad":"' + 'p' * 1000000 + '"}}\n')
d = 3000
open(w + '/deep.jsonl', 'w').write(head + '"x":' + '{"a":' * d + '{' + ','.join('"x":1' for _ in range(100000)) + '}' + '}' * d + '}}\n')
PY
for f in flat deep; do
	size=$(wc -c <"$work/$f.jsonl")
	# check exits 1: the requests are violations.
	/usr/bin/time -o "$work/$f.time" -f "$f ($size bytes): user %U s, sys %S s, elapsed %e s, peak RSS %M KB" \
		"$work/ahp-tap" check "$work/$f.jsonl" >"$work/$f.out" 2>&1 || true
	cat "$work/$f.time"
	grep '^summary' "$work/$f.out" || true
done
