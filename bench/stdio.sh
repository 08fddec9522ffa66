#!/usr/bin/env bash
# bench/stdio.sh: round trips of 1 KiB hooks/intercept requests over stdio,
# directly to a minimal backend, through socat (the minimal relay process),
# and through ahp-tap with every check on, in one run. Each configuration
# runs REPS times, interleaved; the table shows medians. BENCHMARKS.md
# ("stdio") records a run.
#
#   bench/stdio.sh                                   # 20000 one at a time, 200000 at 32 in flight, 3 reps
#   REPS=5 LATENCY_N=5000 THROUGHPUT_N=50000 bench/stdio.sh
#
# A/B in one run (the machine's load varies between runs):
#   CONFIGS="socat all"   only these configurations (of: direct socat all
#                         capture idle noaudit; default all six)
#   BASE=main             also "ahp-tap@main, all checks": that commit built
#                         from `git archive`, interleaved with the others
#   VARIANTS="A=1 B=2,C=3" also "all checks" with each environment setting
#                         (a comma joins settings of one variant)
#   RESULTS=FILE          keep every run's figures (JSON Lines) in FILE
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v socat >/dev/null 2>&1; then
	echo "socat not found; installing it with apt-get" >&2
	if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi
	$SUDO apt-get update -qq >&2 && $SUDO apt-get install -y -qq socat >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ahp-tap" ./cmd/ahp-tap
go build -o "$work/stdiobench" ./bench/stdiobench
if [ -n "${BASE:-}" ]; then
	mkdir "$work/base"
	git archive "$BASE" | tar -x -C "$work/base"
	(cd "$work/base" && go build -o "$work/ahp-tap-base" ./cmd/ahp-tap)
fi
configs=" ${CONFIGS:-direct socat all capture idle noaudit} "
has() { case $configs in *" $1 "*) return 0 ;; esac; return 1; }

# The registration ahp-tap checks against: a persistent stdio backend
# intercepting tool.before with a deadline (BASE-5, CORR-3, STDIO-3 on).
cat > "$work/registration.json" <<'JSON'
{"protocolVersion":"draft","hooks":[{"id":"com.example.bench","transport":{"type":"stdio","command":"stdiobench","args":["-backend"],"lifecycle":"persistent"},
 "subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"metadata"}}]}]}
JSON

backend="$work/stdiobench -backend"
flags=(-latency-requests "${LATENCY_N:-20000}" -throughput-requests "${THROUGHPUT_N:-200000}" -inflight "${INFLIGHT:-32}" -size 1024 -format json)
tap=("$work/ahp-tap" stdio --registration "$work/registration.json" --hook com.example.bench --log "$work/findings.jsonl" --summary=false)
results="$work/results.jsonl"

run_tap() { # name, extra ahp-tap flags...: one ahp-tap configuration
	local name=$1; shift
	local t=("${tap[@]}")
	[ -n "${TAP_BIN:-}" ] && t[0]=$TAP_BIN
	[ -n "${TAP_ENV:-}" ] && t=(env ${TAP_ENV//,/ } "${t[@]}") # A=1,B=2: both
	case " $* " in
	*" --audit=false "*) "$work/stdiobench" -name "$name" "${flags[@]}" -- "${t[@]}" "$@" -- $backend >> "$results" ;;
	*) "$work/stdiobench" -name "$name" -audit-log "$work/findings.jsonl" "${flags[@]}" -- "${t[@]}" "$@" -- $backend >> "$results"
	   # Keep one audited run's findings to show which checks fired.
	   "$work/stdiobench" -name sample -latency-requests 100 -throughput-requests 2000 -format json -- "${t[@]}" --log "$work/last-audited.jsonl" "$@" -- $backend >/dev/null ;;
	esac
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(go version | cut -d' ' -f3), socat $(socat -V | grep -m1 'socat version' | cut -d' ' -f3)"
for rep in $(seq "${REPS:-3}"); do
	echo "# rep $rep" >&2
	has direct && "$work/stdiobench" -name direct "${flags[@]}" -- $backend >> "$results"
	has socat && "$work/stdiobench" -name socat "${flags[@]}" -- socat STDIO EXEC:"$backend" >> "$results"
	[ -n "${BASE:-}" ] && TAP_BIN="$work/ahp-tap-base" run_tap "ahp-tap@$BASE, all checks"
	has all && run_tap "ahp-tap, all checks"
	for v in ${VARIANTS:-}; do TAP_ENV=$v run_tap "ahp-tap, all checks, $v"; done
	has capture && run_tap "ahp-tap, all checks + capture" --capture "$work/session.capture"
	has idle && run_tap "ahp-tap, all checks, --audit-priority=idle" --audit-priority=idle
	has noaudit && run_tap "ahp-tap --audit=false" --audit=false
	rm -f "$work/session.capture"
done
"$work/stdiobench" -summarize "$results"
[ -n "${RESULTS:-}" ] && cp "$results" "$RESULTS"
echo
echo "# checks reported by ahp-tap in short audited runs (32 in flight breaks STDIO-3 on purpose):"
grep -o '"check":"[A-Z0-9-]*"' "$work/last-audited.jsonl" | sort | uniq -c | sed 's/^/#   /' || true
