#!/usr/bin/env bash
# ctest -L targets: two requests in flight (scenarios/targets/020-in-flight-*)
# against a real service of its own wire, examples/services/python-sqlite,
# its provider call held at skewbench's effect sink.
#
#   check_in_flight.sh SKEWBENCH SOURCE_DIR
#
# 1. The three scenarios run: SAFE, 1 effect each; the second POST was
#    refused (409) while the first was held, and the held call is the one
#    effect the sink counted; the folder verifies.
# 2. It can fail: a copy of the service that takes a record in progress for
#    an absent one charges twice, and every scenario reads CONFLICT, 2
#    effects at the sink, whatever the service answers.
# 3. A held call with no release is refused before anything runs (exit 2,
#    naming the step's JSON path), as is a count out of range; the same
#    scenario against a service that performs its effect itself (remote-effect)
#    is exit 2 naming what it needs.
set -euo pipefail
skewbench=${1:?usage: check_in_flight.sh SKEWBENCH SOURCE_DIR}
source_dir=${2:?usage: check_in_flight.sh SKEWBENCH SOURCE_DIR}
cd "$source_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
example=examples/services/python-sqlite

code=0
"$skewbench" run scenarios/targets/020-in-flight-*.json --target "$example" --out "$scratch/run" -q \
  >"$scratch/run.txt" 2>&1 || code=$?
if [[ $code -ne 0 ]]; then
  cat "$scratch/run.txt"
  echo "FAIL: the 020 scenarios against $example exited $code, not 0"
  exit 1
fi
"$skewbench" verify "$scratch/run" >/dev/null
python3 - "$scratch/run" <<'PY'
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/scenarios/020-in-flight-*.json"))
# One evidence file per scenario of the family, however many it holds.
assert len(files) == len(glob.glob("scenarios/targets/020-in-flight-*.json")) >= 3, files
for f in files:
    e = json.load(open(f))
    assert e["verdict"] == "SAFE" and e["final"]["effect_count"] == 1, (f, e["verdict"], e["final"])
    second = e["timeline"][2]
    assert second["kind"] == "post_concurrent" and second["observed"]["refused_answers"] == 1, second["observed"]
    refused = second["exchanges"][0]
    assert refused["http_status"] == 409 and refused["harness"]["answer_class"] == "refused_in_progress", refused
    release = e["timeline"][3]
    assert release["observed"]["released_calls"] == 1 and release["observed"]["applied_answers"] == 1, release
    assert release["exchanges"][0]["harness"]["sent_by_step"] == 1, release["exchanges"][0]
    calls = e["effect_sink_calls"]
    assert [(c["fault"], c["answer"]) for c in calls] == [("hold", "ok")], calls
print("ok: the second POST refused (409) while the first was held; SAFE, 1 effect, in each of the 3 scenarios")
PY

# The copy that keeps no record in progress: a record not yet completed reads
# as absent, so the second request charges too.
changed_copy "$example" no-lock \
  's/if row is not None and row\[3\] > now:/if row is not None and row[3] > now and row[1] == "completed":/'
"$skewbench" run scenarios/targets/020-in-flight-*.json --target "$scratch/no-lock" --out "$scratch/no-lock-run" -q \
  >"$scratch/no-lock.txt" 2>&1 || true
python3 - "$scratch/no-lock-run" "$scratch/no-lock.txt" <<'PY'
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/scenarios/020-in-flight-*.json"))
for f in files:
    e = json.load(open(f))
    applied = [c for c in e["effect_sink_calls"] if c["applied"]]
    if e["verdict"] != "CONFLICT" or e["final"]["effect_count"] != 2 or len(applied) != 2:
        print(open(sys.argv[2]).read())
        sys.exit(f"FAIL: {f}: a service that charges while the first request is in flight gave {e['verdict']}")
expected = len(glob.glob("scenarios/targets/020-in-flight-*.json"))
if len(files) != expected or expected < 3:
    sys.exit(f"FAIL: {len(files)} evidence files, not {expected}")
print("ok: a copy that takes a record in progress for an absent one reads CONFLICT, 2 effects at the sink")
PY

python3 - "$scratch" <<'PY'
import json, sys
doc = json.load(open("scenarios/targets/020-in-flight-same-instance.json"))
unreleased = dict(doc, steps=doc["steps"][:3])
json.dump(unreleased, open(sys.argv[1] + "/unreleased.json", "w"))
doc["steps"][2]["count"] = 0
json.dump(doc, open(sys.argv[1] + "/count-0.json", "w"))
PY
run_expecting 2 "$scratch/unreleased.txt" "a held call with no release" \
  "\$.steps\[1\].kind: post_held leaves a provider call held: a later step must release it" -- \
  run "$scratch/unreleased.json" --target "$example" --out "$scratch/unreleased-run" -q
run_expecting 2 "$scratch/count-0.txt" "post_concurrent with count 0" \
  "\$.steps\[2\].count: 0 is out of range: must lie within \[1, 64\]" -- \
  run "$scratch/count-0.json" --target "$example" --out "$scratch/count-0-run" -q
run_expecting 2 "$scratch/control.txt" "an in-flight scenario against remote-effect" \
  "post_held and post_concurrent and release_provider need a service whose provider calls reach skewbench's effect sink" -- \
  run scenarios/targets/020-in-flight-same-instance.json --target remote-effect --out "$scratch/control-run" -q
echo "ok: a held call with no release, a count out of range and a service with no provider call are exit 2, named"
