#!/usr/bin/env bash
# bench/reports.sh: replay a large generated capture to SARIF and HTML (and
# JUnit and GitHub annotations) and measure wall time and peak RSS
# (/usr/bin/time -v, or GNU time's %M). The capture comes from
# bench/capgen: ~1 KiB hooks/intercept requests from a persistent stdio
# backend, with a BASE-2 fault every BAD_EVERY responses and a STDIO-1
# banner every 10*BAD_EVERY exchanges, so the reports hit their caps
# (25,000 SARIF results, 50,000 HTML findings). BENCHMARKS.md ("CI
# reports") records a run.
#
#   bench/reports.sh                 # 1024 MiB capture, BAD_EVERY=20
#   MB=256 BAD_EVERY=100 bench/reports.sh
#   KEEP=1 bench/reports.sh          # keep the work directory (reports, capture)
set -euo pipefail
cd "$(dirname "$0")/.."

MB=${MB:-1024}
BAD_EVERY=${BAD_EVERY:-20}
work=$(mktemp -d "${TMPDIR:-/tmp}/ahp-tap-reports.XXXXXX")
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$work"' EXIT; else echo "work directory: $work" >&2; fi

if ! command -v /usr/bin/time >/dev/null 2>&1; then
	echo "GNU time not found (/usr/bin/time): apt-get install time" >&2
	exit 2
fi
go build -o "$work/ahp-tap" ./cmd/ahp-tap
go build -o "$work/capgen" ./bench/capgen

"$work/capgen" -o "$work/big.capture" -mb "$MB" -bad-every "$BAD_EVERY"
size=$(stat -c %s "$work/big.capture")
frames=$(grep -c '"type":"frame"' "$work/big.capture" || true)
echo "capture: $size bytes, $frames frames ($(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), $(go version | cut -d' ' -f3))"

measure() { # name, ahp-tap args...
	local name=$1; shift
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$work/ahp-tap" replay --fail-on never --quiet "$@" "$work/big.capture" \
		> "$work/$name.stdout" 2> "$work/$name.stderr" || true
	read -r secs user sys kib < "$work/time"
	cpu=$(echo "$user + $sys" | bc -l)
	printf '| %-38s | %7.1f s | %7.1f s | %8.0f | %7.1f MiB |\n' "$name" "$secs" "$cpu" "$(echo "$frames / $cpu" | bc -l)" "$(echo "$kib / 1024" | bc -l)"
}

echo
echo "| reports | wall time | CPU time | frames per CPU second | peak RSS |"
echo "|---|---:|---:|---:|---:|"
measure "text to stdout (keeps every finding)"
measure "sarif" --report "sarif=$work/r.sarif"
measure "html" --report "html=$work/r.html"
measure "sarif + html + junit + github" --report "sarif=$work/r2.sarif" --report "html=$work/r2.html" --report "junit=$work/r2.xml" --report "github=$work/r2.gh"
echo
for f in r.sarif r.html r2.xml r2.gh; do
	printf '%s: %s bytes\n' "$f" "$(stat -c %s "$work/$f")"
done
grep -o '"results left out[^"]*\|[0-9]* results left out' "$work/r.sarif" | head -1 || true
grep -o '[0-9]* findings beyond the first [0-9]*' "$work/r.html" | head -1 || true
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
