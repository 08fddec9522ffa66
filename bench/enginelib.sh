# bench/enginelib.sh: what the engine benchmark scripts share (sourced by
# bench/engine.sh and bench/engineinstr.sh).

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
