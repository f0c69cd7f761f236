#!/usr/bin/env bash
# Runs the tests that start real processes while the machine is busy: beside
# them, busy loops (two per core by default) take every core, as on a shared
# CI runner. A test that passes only on a quiet machine fails here. Builds
# first, as scripts/test.sh does, with the loops not yet running.
#
#   scripts/test-under-load.sh                  ctest -L 'faults|realclock|integration|targets'
#   scripts/test-under-load.sh -L faults        any ctest selection instead
#   SKEWBENCH_LOAD_PER_CORE=3 scripts/test-under-load.sh
#
# Prints the tests passed, failed and run, and the wall time; exits with
# ctest's exit code (2 when the load could not be set up).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
build_dir="${SKEWBENCH_BUILD_DIR:-$root/build}"
per_core="${SKEWBENCH_LOAD_PER_CORE:-2}"
if ! [[ "$per_core" =~ ^[0-9]+$ ]] || ((per_core > 64)); then
  echo "test-under-load: SKEWBENCH_LOAD_PER_CORE must be a whole number from 0 to 64, not '$per_core'" >&2
  exit 2
fi
if (($# == 0)); then
  set -- -L 'faults|realclock|integration|targets'
fi

# Install and build (ctest -N lists the tests and runs none).
"$here/test.sh" -N >/dev/null || exit $?

loops=()
log="$(mktemp "${TMPDIR:-/tmp}/skewbench-load.XXXXXX")" || exit 2
stop_loops() {
  ((${#loops[@]})) && kill "${loops[@]}" 2>/dev/null
  ((${#loops[@]})) && wait "${loops[@]}" 2>/dev/null
  loops=()
  rm -f "$log"
}
trap stop_loops EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cores="$(nproc)"
for ((i = 0; i < cores * per_core; i++)); do
  (while :; do :; done) &
  loops+=("$!")
done

# The tests' own skewbench runs must not annotate or fill a CI job's summary.
unset GITHUB_ACTIONS GITHUB_STEP_SUMMARY
start_s="$(date +%s)"
ctest --test-dir "$build_dir" --output-on-failure --parallel "$cores" --no-tests=error "$@" 2>&1 | tee "$log"
code="${PIPESTATUS[0]}"
wall_s=$(($(date +%s) - start_s))

summary="$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1)"
failed="$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\).*/\1/p' <<<"$summary")"
total="$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\).*/\2/p' <<<"$summary")"
echo
if [[ -n "$total" ]]; then
  echo "under load ($((cores * per_core)) busy loops on $cores cores): $((total - failed)) passed," \
    "$failed failed of $total tests in ${wall_s} s (ctest exit code $code)"
else
  echo "under load ($((cores * per_core)) busy loops on $cores cores): ctest ran no test," \
    "exit code $code after ${wall_s} s"
fi
exit "$code"
