#!/usr/bin/env bash
# bench/faults.sh: the fault suite (issue 8). Every attack ahp-tap was
# tried with runs as real processes (cmd/ahp-tap/faults_test.go, build tag
# "faults", outside the default CI run): each asserts the bytes forwarded
# up to the fault are unchanged, the exit status is mirrored, the findings
# are reported and no process is left behind, and prints one FAULT line
# with its figures and the peak RSS of the ahp-tap process. RELIABILITY.md
# records a run. Also runs the hardening regression tests (items 3-10).
#
#   bench/faults.sh                      # everything, ~2-4 minutes on 2 cores
#   FAULTS_CLIENTS=5000 bench/faults.sh  # the concurrent-clients fault at 5,000
#   RUN=Fault200MB bench/faults.sh       # one fault
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run=${RUN:-'Fault|TestStdio(ExitsWhen|SignalAfter|FIFO|FilesAre|ForwardsQuit|KeepsSignals|KilledTap)|TestReplay(AndCheck|LongLine)|TestFlagRanges|TestHTTP(OffLoopback|SecondSignal|StderrNotRead)|TestAuditorCloseWithin|TestAnsweredExchanges'}
status=0
FAULTS_OUT=$out go test -tags faults -count=1 -timeout 30m -run "$run" -v ./cmd/ahp-tap 2>&1 |
	grep -E '^(--- |ok|FAIL|panic)|FAULT ' | sed -E 's/^ +[a-z_]+_test.go:[0-9]+: //' || status=$?
go test -count=1 -run 'TestOpenAppend|TestCheckDir|TestWriter|TestCertStore|TestSpecFilesAreConfined|TestLogCloseWithin|TestOpenLogRefuses' \
	./internal/... ./httpproxy ./rules ./report 2>&1 | grep -E '^(ok|FAIL|---)' || status=$?
echo
echo "figures:"
sort -u "$out"
exit $status
