#!/usr/bin/env bash
# Reproduces #018 on this machine: installs what is missing, builds in Release,
# runs every scenario in scenarios/ against a throwaway PostgreSQL cluster and a
# remote-effect process that skewbench starts and stops itself, and writes the
# evidence to results/runs/<utc>-<id>/ (results/latest points at it). The
# cluster runs PostgreSQL 17.6 from the script's cache (installed when missing;
# where npm cannot fetch it, the system server, with a warning in the evidence).
# Exits with skewbench's exit code: 0 pass, 1 an expectation not met,
# 2 usage or scenario error, 3 infrastructure error.
#
#   scripts/reproduce.sh                    all scenarios
#   scripts/reproduce.sh scenarios/X.json   one scenario (any skewbench run paths)
#   SKEWBENCH_POSTGRES_BIN=DIR scripts/reproduce.sh   on the server binaries in DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"

skewbench_install_packages
skewbench_install_postgres17 || true  # said why; skewbench falls back to the system server
BUILD_DIR="${SKEWBENCH_BUILD_DIR:-$SKEWBENCH_ROOT/build}"
skewbench_build "$BUILD_DIR" skewbench remote-effect

cd "$SKEWBENCH_ROOT"
run_name="$(date -u +%Y%m%dT%H%M%SZ)-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
run_dir="results/runs/$run_name"
mkdir -p results/runs
paths=("$@")
[[ ${#paths[@]} -eq 0 ]] && paths=(scenarios)

set +e
"$BUILD_DIR/bin/skewbench" run "${paths[@]}" --out "$run_dir"
code=$?
set -e

if [[ -f "$run_dir/RESULT.md" ]]; then
  ln -sfn "runs/$run_name" results/latest
  printf '\n'
  cat "$run_dir/RESULT.md"
  printf '\nevidence: %s (results/latest)\n' "$run_dir"
fi
exit "$code"
