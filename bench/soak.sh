#!/usr/bin/env bash
# bench/soak.sh: about 10 minutes of mixed traffic through a stdio tap and
# an HTTP tap at once (bench/soak, not in CI): 1 KiB to 1 MiB requests,
# every 97th response deliberately lacking protocolVersion, a non-JSON line
# every 1,000 stdio requests. Prints frames processed and RSS every 10 s,
# then the findings per check, the frames not audited (TAP-1), and whether
# the findings equal those the traffic should cause. RELIABILITY.md records
# a run.
#
#   bench/soak.sh                 # 10 minutes
#   DURATION=1m bench/soak.sh     # shortened
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ahp-tap" ./cmd/ahp-tap
go build -o "$work/soak" ./bench/soak
"$work/soak" -tap "$work/ahp-tap" -dir "$work" -duration "${DURATION:-10m}" -sample "${SAMPLE:-10s}"
