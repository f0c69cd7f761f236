#!/usr/bin/env bash
# The steps of the policy gate (.github/workflows/policy-gate.yml). The
# workflow runs them, and so does a test (tests/integration/policy_gate_test.cpp),
# so what is tested is what CI runs.
#
#   policy-gate.sh shard GRID I N OUT         sweep shard I of N of GRID into OUT
#   policy-gate.sh merge OUT SHARD_DIR...     merge the shards into OUT, draw the report, verify OUT
#   policy-gate.sh compare REFERENCE MERGED   compare as Markdown on stdout and as JUnit XML in
#                                             MERGED-compare-junit.xml; exits with compare's code
#
# Environment: SKEWBENCH (default: build/bin/skewbench), and for `shard`
# SKEWBENCH_DATABASE_URL and SKEWBENCH_REMOTE_URL, the shard's own services.
# Each step exits with the code of the skewbench command that failed
# (docs/sweeps.md lists them), 0 when all passed, 2 for a usage error here.
set -euo pipefail

skewbench=${SKEWBENCH:-build/bin/skewbench}

usage() {
  sed -n '6,8p' "$0" >&2
  exit 2
}

step=${1:-}
shift || true
case "$step" in
  shard)
    [[ $# -eq 4 ]] || usage
    grid=$1 index=$2 count=$3 out=$4
    for var in SKEWBENCH_DATABASE_URL SKEWBENCH_REMOTE_URL; do
      if [[ -z ${!var:-} ]]; then
        echo "policy-gate.sh: set $var to the URL of this shard's own service" >&2
        exit 2
      fi
    done
    exec "$skewbench" sweep "$grid" --shard "$index/$count" --out "$out" \
      --database-url "$SKEWBENCH_DATABASE_URL" --remote-url "$SKEWBENCH_REMOTE_URL" --quiet
    ;;
  merge)
    [[ $# -ge 2 ]] || usage
    out=$1
    shift
    "$skewbench" merge "$@" --out "$out"
    # The report joins the sweep's manifest, so verify checks it too.
    "$skewbench" report "$out" >/dev/null
    "$skewbench" verify "$out"
    ;;
  compare)
    [[ $# -eq 2 ]] || usage
    exec "$skewbench" compare "$1" "$2" --format markdown --junit "${2%/}-compare-junit.xml"
    ;;
  *)
    usage
    ;;
esac
