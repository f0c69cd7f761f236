#!/usr/bin/env bash
# ctest -L targets: skewbench explore against a target, on real clocks
# (docs/explore.md, "Against a target").
#
#   check_explore.sh SKEWBENCH SOURCE_DIR
#
# 1. explore --target powertools-redis, no bounds file (the compiled-in
#    scenarios/explore/target.json), finds a duplicate inside the TTL across
#    two instances by itself and shrinks it to at most the steps of
#    scenarios/targets/018-two-instances-skewed.json; explore.json, the
#    finding's scenario and evidence conform to the schemas.
# 2. skewbench run of that minimal scenario against the target is CONFLICT,
#    2 effects (exit 1: it expects one).
# 3. The same seed and --max-scenarios again give the same digest and the
#    same minimal scenarios, byte for byte.
# 4. It can fail to find: the remote-effect target under a declared authority
#    every instance judges by (scenarios/explore/target-declared-authority.json)
#    breaks nothing (exit 0), with the same kinds of schedule.
# 5. Bounds the target cannot run are refused before anything starts (exit 2):
#    restart_store against a target without a store process.
set -euo pipefail
skewbench=${1:?usage: check_explore.sh SKEWBENCH SOURCE_DIR}
source_dir=${2:?usage: check_explore.sh SKEWBENCH SOURCE_DIR}
cd "$source_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

explore_pt() {
  run_expecting 1 "$scratch/$1.txt" "explore --target powertools-redis" "found and shrunk against target powertools-redis" -- \
    explore --target powertools-redis --seed 1 --max-scenarios 60 --out "$scratch/$1"
}
explore_pt first
python3 - "$scratch/first" <<'PY'
import json, sys
out = sys.argv[1]
summary = json.load(open(f"{out}/explore.json"))
assert summary["engine"] == "real" and summary["target"] == "powertools-redis", summary
assert summary["bounds"]["file"] == "scenarios/explore/target.json", summary["bounds"]
published = len(json.load(open("scenarios/targets/018-two-instances-skewed.json"))["steps"])
across = [f for f in summary["findings"]
          if f["invariant"] == "at_most_one_effect_within_ttl" and f["minimal_nodes"] == 2
          and f["minimal_steps"] <= published]
if not across:
    sys.exit(f"FAIL: no duplicate across two instances in at most {published} steps: {summary['findings']}")
finding = across[0]
scenario = json.load(open(f"{out}/{finding['scenario_file']}"))
evidence = json.load(open(f"{out}/{finding['evidence_file']}"))
assert scenario["remote"] == {"instances": "per_node", "clock": "node"}, scenario["remote"]
offsets = {n["clock_offset_s"] for n in scenario["nodes"]}
assert len(offsets) == 2, f"FAIL: the two nodes' clocks agree: {scenario['nodes']}"
assert evidence["final"]["effect_count"] == 2 and evidence["verdict"] == "CONFLICT", evidence["final"]
open(f"{out}.across", "w").write(finding["scenario_file"])
print(f"ok: {finding['scenario_file']}: {finding['minimal_steps']} steps, {finding['why']}")
PY
"$skewbench" verify "$scratch/first" >"$scratch/verify.txt" || { cat "$scratch/verify.txt"; echo "FAIL: $scratch/first does not verify"; exit 1; }
python3 tests/support/check_schemas.py schemas "$scratch/first" scenarios/explore/target.json >"$scratch/schemas.txt" 2>&1 ||
  { cat "$scratch/schemas.txt"; echo "FAIL: the explore folder does not conform to the schemas"; exit 1; }

minimal="$scratch/first/$(cat "$scratch/first.across")"
run_expecting 1 "$scratch/run.txt" "run of the minimal scenario" "CONFLICT" "final.effect_count: expected 1, observed 2" -- \
  run "$minimal" --target powertools-redis --out "$scratch/run"

explore_pt again
python3 - "$scratch/first" "$scratch/again" <<'PY'
import json, pathlib, sys
first, again = (pathlib.Path(p) for p in sys.argv[1:])
a, b = (json.load(open(p / "explore.json")) for p in (first, again))
if a["scenarios_core_digest"] != b["scenarios_core_digest"]:
    sys.exit(f"FAIL: the same seed gave the digests {a['scenarios_core_digest']} and {b['scenarios_core_digest']}")
files = sorted(str(p.relative_to(first)) for p in first.glob("findings/*/scenario.json"))
if files != sorted(str(p.relative_to(again)) for p in again.glob("findings/*/scenario.json")):
    sys.exit("FAIL: the same seed gave other findings")
for f in files:
    if (first / f).read_bytes() != (again / f).read_bytes():
        sys.exit(f"FAIL: the same seed gave another {f}")
print(f"ok: the same seed twice: digest {a['scenarios_core_digest']}, {len(files)} minimal scenario(s) the same")
PY

run_expecting 0 "$scratch/da.txt" "explore of remote-effect under a declared authority" " 0 broke an invariant" -- \
  explore scenarios/explore/target-declared-authority.json --target remote-effect --seed 1 --max-scenarios 150 \
  --out "$scratch/da"

python3 -c 'import json, sys; b = json.load(open("scenarios/explore/target.json")); b["steps"]["kinds"].append("restart_store"); json.dump(b, open(sys.argv[1], "w"))' \
  "$scratch/store.json"
run_expecting 2 "$scratch/store.txt" "explore with restart_store against express-idempotency" \
  "restart_store needs a service whose store runs as a process of its own" -- \
  explore "$scratch/store.json" --target express-idempotency --out "$scratch/store"
[[ ! -e $scratch/store ]] || { echo "FAIL: a refused explore wrote $scratch/store"; exit 1; }
echo "ok: explore against targets"
