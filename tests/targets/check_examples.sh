#!/usr/bin/env bash
# ctest -L targets: the example services of their own wire
# (examples/services/), held to their rows of the findings table
# docs/targets.md keeps, their effects counted at skewbench's effect sink.
#
#   check_examples.sh SKEWBENCH SOURCE_DIR
#
# 1. skewbench targets --targets-dir examples/services --expect docs/targets.md
#    exits 0, and the table has a row for every scenario of every example (so
#    the comparison is not empty); every evidence folder verifies.
# 2. Every row's effect count is the number of applied sink calls its
#    evidence holds for its operation, every one from an instance of the
#    example, and a CONFLICT row holds two.
# 3. The check can fail: with one example row of a copy of the table changed,
#    the same command exits 1 and names that row.
set -euo pipefail
skewbench=${1:?usage: check_examples.sh SKEWBENCH SOURCE_DIR}
source_dir=${2:?usage: check_examples.sh SKEWBENCH SOURCE_DIR}
cd "$source_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

targets_as_table "$scratch/all" --targets-dir examples/services
echo "ok: every row of every example as docs/targets.md says; each evidence folder verifies"

python3 - "$scratch/all" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
findings = json.load(open(os.path.join(out, "findings.json")))
examples = sorted(os.path.basename(os.path.dirname(f)) for f in glob.glob("examples/services/*/target.json"))
scenarios = sorted(os.path.basename(f)[:-5] for f in glob.glob("scenarios/targets/*.json"))
table = open("docs/targets.md").read()
for name in examples:
    for scenario in scenarios:
        if f"| {name} | {scenario} |" not in table:
            sys.exit(f"FAIL: docs/targets.md has no row for {name} × {scenario}")
measured = 0
for r in findings["rows"]:
    where = f'{r["target"]} × {r["scenario"]}'
    if r["verdict"] == "n/a":
        continue
    evidence = json.load(open(os.path.join(out, r["evidence"])))
    calls = evidence["effect_sink_calls"]
    op = evidence["operation_id"]
    applied = [c for c in calls if c["applied"]]
    if any(c["operation_id"] != op for c in calls):
        sys.exit(f"FAIL: {where}: a sink call for another operation in the evidence: {calls}")
    if any(c["instance"].split("@")[0] != r["target"] for c in calls):
        sys.exit(f"FAIL: {where}: a sink call from no instance of the example: {calls}")
    if len(applied) != r["effect_count"] or evidence["final"]["effect_count"] != len(applied):
        sys.exit(f'FAIL: {where}: {r["effect_count"]} effects in the row, {len(applied)} applied sink calls')
    if r["verdict"] == "CONFLICT" and len(applied) < 2:
        sys.exit(f"FAIL: {where}: CONFLICT with {len(applied)} applied sink calls")
    measured += 1
print(f"ok: {measured} rows, each effect count the applied sink calls in its evidence")
PY

# One example row planted as the other verdict: the run must say so.
planted_difference python-postgres 018-store-clock-steps-ahead "CONFLICT | 2 | 2 | store" "SAFE | 2 | 1 | none" \
  CONFLICT --targets-dir examples/services
echo "ok: an example row that differs from the table is named, exit 1"
