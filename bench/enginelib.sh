# bench/enginelib.sh: what the engine benchmark scripts share (sourced by
# bench/engine.sh, bench/engineinstr.sh and, for irefs, bench/auditinstr.sh).

# engine_bins NAME: make the run's scratch directory, $WORK (removed on
# exit), and build in it the tap package's test binary of this checkout
# and, when BASELINE names another checkout, of that one; bins lists
# them, the baseline first.
engine_bins() {
	WORK=$(mktemp -d "/tmp/ahp-tap-bench-$1.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	(cd "$ROOT" && go test -c -o "$WORK/this.test" ./tap)
	bins=("$WORK/this.test")
	if [ -n "${BASELINE:-}" ]; then
		(cd "$BASELINE" && go test -c -o "$WORK/baseline.test" ./tap)
		bins=("$WORK/baseline.test" "$WORK/this.test")
	fi
}

# irefs BINARY BENCHMARK ITERATIONS: the instructions retired by a run of
# the test binary's benchmark at a fixed iteration count, under valgrind's
# cachegrind (every thread, the runtime's included). Go's cputicks uses
# RDTSCP, which valgrind 3.19 cannot run: the runtime does without it.
irefs() { # binary, benchmark, iterations
	GODEBUG=cpu.rdtscp=off valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
		"$1" -test.run '^$' -test.bench "$2" -test.benchtime "${3}x" -test.cpu 1 2>&1 |
		awk '/I +refs:/ {gsub(",", "", $NF); print $NF}'
}

# irefs_per BINARY BENCHMARK: the instructions per iteration of the
# benchmark, from two runs at N1 and N2 iterations (what does not scale
# with the iterations, start-up and warm-up, cancels out).
irefs_per() {
	local i1 i2
	i1=$(irefs "$1" "$2" "$N1")
	i2=$(irefs "$1" "$2" "$N2")
	echo $(((i2 - i1) / (N2 - N1)))
}
