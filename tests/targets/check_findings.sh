#!/usr/bin/env bash
# ctest -L targets: the target series against every target under targets/,
# held to the findings table docs/targets.md keeps (docs/targets.md).
#
#   check_findings.sh SKEWBENCH SOURCE_DIR
#
# 1. Every target file conforms to schemas/target.schema.json.
# 2. skewbench targets --expect docs/targets.md exits 0: every row as the table
#    says; each target's evidence folder verifies; every CONFLICT row names
#    the exchange that duplicated the effect and the clocks at that moment.
# 3. The check can fail: with one row of a copy of the table changed, the
#    same command exits 1 and names that row.
set -euo pipefail
skewbench=${1:?usage: check_findings.sh SKEWBENCH SOURCE_DIR}
source_dir=${2:?usage: check_findings.sh SKEWBENCH SOURCE_DIR}
cd "$source_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

python3 - <<'PY'
import glob, json, sys
import jsonschema
schema = json.load(open("schemas/target.schema.json"))
files = sorted(glob.glob("targets/*/target.json"))
if len(files) < 5:
    sys.exit(f"FAIL: only {len(files)} target files")
for f in files:
    jsonschema.validate(json.load(open(f)), schema)
print(f"ok: {len(files)} target files conform to schemas/target.schema.json")
PY

targets_as_table "$scratch/all"
echo "ok: every row of every target as docs/targets.md says; each target's evidence folder verifies"

python3 - "$scratch/all" <<'PY'
import json, os, sys
out = sys.argv[1]
findings = json.load(open(os.path.join(out, "findings.json")))
conflicts = [r for r in findings["rows"] if r["verdict"] == "CONFLICT"]
if not conflicts:
    sys.exit("FAIL: no CONFLICT row at all")
for r in conflicts:
    d = r["duplicate"]
    where = f'{r["target"]} × {r["scenario"]}'
    if not d or not isinstance(d.get("instance_clock_s"), int):
        sys.exit(f"FAIL: {where}: no duplicating exchange with its clock")
    evidence = json.load(open(os.path.join(out, r["evidence"])))
    step = next(s for s in evidence["timeline"] if s["index"] == d["step"])
    # The POSTs that applied: the sink's reading of a service of its own wire
    # (harness.answer_class), the answer of skewbench's protocol otherwise.
    applied = [x for x in step["exchanges"] if (x.get("harness") or {}).get("answer_class") == "applied"
               or (x["request"]["path"] == "/effects" and isinstance(x["response"], dict)
                   and x["response"].get("delivery") == "applied")]
    if not applied or applied[-1]["harness"]["process_clock_s"] != d["instance_clock_s"]:
        sys.exit(f"FAIL: {where}: the evidence has no applied replay at {d['instance_clock_s']}")
    if not step.get("process_clocks"):
        sys.exit(f"FAIL: {where}: the evidence has no process clocks at the replay")
    if evidence["final"]["effect_count"] < 2:
        sys.exit(f"FAIL: {where}: the service counted {evidence['final']['effect_count']} effects")
print(f"ok: {len(conflicts)} CONFLICT rows, each with the exchange that duplicated the effect and every process's clock")
PY

# The control's row of #017 planted as deduplicated: the run must say so.
planted_difference remote-effect 017-ttl-shorter-than-recovery "CONFLICT | 2 | 2" "SAFE | 2 | 1" CONFLICT
echo "ok: a row that differs from the table is named, exit 1"
