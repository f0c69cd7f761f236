#!/usr/bin/env bash
# ctest -L faults: services of their own wire that call their provider
# (skewbench's effect sink) as no scenario expects, under
# scenarios/targets/015-same-key-after-lost-ack.json (one charge, a replay
# answered from the record). Each is tests/faults/hostile_provider_calls.py.
#
#   check_hostile_sink.sh SKEWBENCH SOURCE_DIR
#
# 1. A replay that charges again while the service drains on SIGTERM is
#    counted: CONFLICT, 2 effects, both calls in the scenario's evidence.
# 2. A replay that charges again 0, 20 or 40 ms after it answered: CONFLICT
#    every time, 2 effects; the verdict does not hang on milliseconds.
# 3. 1,200 calls with 20,000-byte ids after one charge: an ERROR (exit 3)
#    saying the sink refused the calls past its window; the evidence stays
#    small and holds no id longer than the sink keeps.
# 4. An id of bytes that are not UTF-8 (FF, ESC): an ERROR (exit 3) with
#    its table and evidence written, the bytes as \xNN in the evidence, no
#    ESC or CR in the output or RESULT.md, and the folder verifies.
# 5. A call outside every instance's {sink_url} (its /instance/NAME path
#    dropped): an ERROR (exit 3) saying so.
# 6. A service command that clears LD_PRELOAD never reads the clock
#    skewbench drives: exit 3, an ERROR naming why, no verdict.
# 7. verify recounts a sink-counted row from its calls: the drain run's
#    folder with one applied call deleted (the manifest written again for the
#    file) does not verify.
# 8. A Python service that sleeps (time.sleep, before it listens and in each
#    answer) runs under "wall_clock": "skewbench" and gets its verdict: SAFE.
# 9. No libfaketime shared memory is left behind by the service processes
#    skewbench ended, killed by a restart step or stopped at the end.
set -euo pipefail
skewbench=${1:?usage: check_hostile_sink.sh SKEWBENCH SOURCE_DIR}
source_dir=${2:?usage: check_hostile_sink.sh SKEWBENCH SOURCE_DIR}
cd "$source_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
scenario=scenarios/targets/015-same-key-after-lost-ack.json
evidence_of() { echo "$scratch/$1-run/scenarios/015-same-key-after-lost-ack.json"; }

# hostile NAME MODE SINK_RULE [ARGS...]: target NAME running the service in
# MODE, its sink's operation id read by SINK_RULE (JSON).
hostile() {
  local name=$1 mode=$2 rule=$3
  shift 3
  mkdir -p "$scratch/$name"
  cp tests/faults/hostile_provider_calls.py "$scratch/$name/"
  python3 - "$scratch/$name/target.json" "$name" "$mode" "$rule" "$*" "${prefix:-}" "${wall_clock:-}" <<'PY'
import json, sys
path, name, mode, rule, extra, prefix, wall_clock = sys.argv[1:]
target = {
    "schema_version": 2, "name": name, "description": "a hostile service of the fault tests",
    "library": "Python 3 standard library", "install": "apt-get install python3",
    "needs": ["python3", "./hostile_provider_calls.py"],
    "service": {"wire": "own", "ttl_s": 60, "ready": {"http_get": "/healthz"},
                "command": prefix + "python3 {target_dir}/hostile_provider_calls.py --port {port} --provider {sink_url} "
                           f"--mode {mode} {extra}".strip()},
    "request": {"method": "POST", "path": "/payments", "key_header": "Idempotency-Key",
                "headers": {"Content-Type": "application/json"},
                "body": {"order_id": "{operation_id}", "amount": "{amount}"}},
    "answer": {"status": {"201": "applied", "200": "replayed"}},
    "sink": {"operation_id": json.loads(rule)},
}
if wall_clock:
    target["service"]["wall_clock"] = wall_clock
json.dump(target, open(path, "w"))
PY
}

# run_hostile NAME: skewbench run of the scenario against target NAME; its
# exit code in $code, its output in $scratch/NAME.txt.
run_hostile() {
  code=0
  "$skewbench" run "$scenario" --target "$scratch/$1" --out "$scratch/$1-run" -q >"$scratch/$1.txt" 2>&1 || code=$?
}

# expect_conflict NAME WHAT: the run of NAME read CONFLICT with 2 applied
# calls for its operation, and its folder verifies.
expect_conflict() {
  python3 - "$(evidence_of "$1")" "$scratch/$1.txt" "$2" <<'PY'
import json, sys
evidence = json.load(open(sys.argv[1]))
applied = [c for c in evidence["effect_sink_calls"] if c["applied"] and c["operation_id"] == evidence["operation_id"]]
if evidence["verdict"] != "CONFLICT" or evidence["final"]["effect_count"] != 2 or len(applied) != 2:
    print(open(sys.argv[2]).read())
    sys.exit(f"FAIL: {sys.argv[3]}: {evidence['verdict']}, {evidence['final'].get('effect_count')} effects, "
             f"{len(applied)} applied calls in the evidence, not CONFLICT with 2")
PY
  "$skewbench" verify "$scratch/$1-run" >/dev/null || { echo "FAIL: $1's folder does not verify"; exit 1; }
}

rule_body='{"json_pointer": "/reference"}'

hostile drain drain "$rule_body"
run_hostile drain
expect_conflict drain "a replay that charges again while the service drains on SIGTERM"
echo "ok: a charge made while the service drains on SIGTERM is counted: CONFLICT, 2 effects"

cp -r "$scratch/drain-run" "$scratch/forged"
python3 - "$scratch/forged" <<'PY'
import hashlib, json, os, sys
folder = sys.argv[1]
name = "scenarios/015-same-key-after-lost-ack.json"
evidence = json.load(open(os.path.join(folder, name)))
evidence["effect_sink_calls"] = evidence["effect_sink_calls"][:1]
data = json.dumps(evidence, indent=2).encode()
open(os.path.join(folder, name), "wb").write(data)
manifest = json.load(open(os.path.join(folder, "manifest.json")))
for entry in manifest["files"]:
    if entry["path"] == name:
        entry["bytes"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
json.dump(manifest, open(os.path.join(folder, "manifest.json"), "w"), indent=2)
PY
if "$skewbench" verify "$scratch/forged" >"$scratch/forged.txt" 2>&1 ||
  ! grep -q "effect_sink_calls hold 1 applied call" "$scratch/forged.txt"; then
  cat "$scratch/forged.txt"
  echo "FAIL: a CONFLICT row of 2 effects whose evidence holds 1 applied sink call verifies"
  exit 1
fi
echo "ok: verify recounts a sink-counted row: 1 applied call under a row of 2 effects does not verify"

for delay in 0 20 40; do
  hostile "late-$delay" late "$rule_body" --delay-ms "$delay"
  run_hostile "late-$delay"
  expect_conflict "late-$delay" "a replay that charges again $delay ms after it answered"
done
echo "ok: a charge 0, 20 or 40 ms after the answer is counted every time: CONFLICT, 2 effects"

hostile flood flood "$rule_body"
run_hostile flood
python3 - "$(evidence_of flood)" "$scratch/flood.txt" "$code" <<'PY'
import json, os, sys
path, output, code = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[3])
evidence = json.load(open(path))
size = os.path.getsize(path)
longest = max(len(c["operation_id"] or "") for c in evidence["effect_sink_calls"])
if code != 3 or evidence["verdict"] != "ERROR" or "refused" not in evidence["error"] or size > 2_000_000 \
        or longest > 300 or max(map(len, output.splitlines())) > 2000:
    print(output[:3000])
    sys.exit(f"FAIL: 1,200 calls with 20,000-byte ids: exit {code}, {evidence['verdict']}, evidence {size} bytes, "
             f"longest id {longest}, error: {evidence.get('error')}")
print(f"ok: 1,200 calls with 20,000-byte ids: an ERROR naming the refused calls, evidence {size} bytes, "
      f"ids at most {longest} characters")
PY

hostile bytes bytes '{"path_segment": 1}'
run_hostile bytes
python3 - "$scratch/bytes-run" "$scratch/bytes.txt" "$code" <<'PY'
import json, sys
folder, output, code = sys.argv[1], open(sys.argv[2], "rb").read(), int(sys.argv[3])
evidence = json.load(open(folder + "/scenarios/015-same-key-after-lost-ack.json"))
report = open(folder + "/RESULT.md", "rb").read()
ids = [c["operation_id"] for c in evidence["effect_sink_calls"]]
if code != 3 or evidence["verdict"] != "ERROR" or not any(i and i.endswith("\\xff\\x1b[2J") for i in ids) \
        or b"\x1b" in output or b"\r" in output or b"\x1b" in report or b"\r" in report \
        or b"015-same-key-after-lost-ack" not in output:
    print(output.decode(errors="replace")[:3000])
    sys.exit(f"FAIL: an id of bytes that are not UTF-8: exit {code}, {evidence['verdict']}, ids {ids}")
print("ok: an id of bytes that are not UTF-8 is an ERROR with its table and evidence, the bytes written \\xNN")
PY
"$skewbench" verify "$scratch/bytes-run" >/dev/null || { echo "FAIL: the bytes run's folder does not verify"; exit 1; }

hostile noprefix noprefix "$rule_body"
run_hostile noprefix
if [[ $code -ne 3 ]] || ! grep -q "outside every instance's {sink_url}" "$(evidence_of noprefix)"; then
  cat "$scratch/noprefix.txt"
  echo "FAIL: a call outside every instance's {sink_url} exited $code, not 3 naming it"
  exit 1
fi
echo "ok: a call outside every instance's {sink_url} is an ERROR saying so"

prefix="env -u LD_PRELOAD " hostile unclocked late "$rule_body"
run_hostile unclocked
if [[ $code -ne 3 ]] || ! grep -q "does not read the clock skewbench drives" "$scratch/unclocked.txt" ||
  ! grep -q "has not loaded libfaketime" "$(evidence_of unclocked)"; then
  cat "$scratch/unclocked.txt"
  echo "FAIL: a service that clears LD_PRELOAD exited $code, not 3 naming the clock it does not read"
  exit 1
fi
echo "ok: a service that clears LD_PRELOAD is an ERROR: it does not read the clock skewbench drives"

hostile leftovers late "$rule_body" --pids "$scratch/pids"
code=0
"$skewbench" run scenarios/targets/016-instance-restart.json --target "$scratch/leftovers" --out "$scratch/leftovers-run" \
  -q >"$scratch/leftovers.txt" 2>&1 || code=$?
started=$(wc -l <"$scratch/pids")
if [[ $started -lt 2 ]]; then
  cat "$scratch/leftovers.txt"
  echo "FAIL: the restart scenario started $started service process(es), not 2"
  exit 1
fi
while read -r pid; do
  if [[ -e /dev/shm/faketime_shm_$pid || -e /dev/shm/sem.faketime_sem_$pid ]]; then
    echo "FAIL: libfaketime's shared memory of service pid $pid is left in /dev/shm"
    exit 1
  fi
done <"$scratch/pids"
echo "ok: no libfaketime shared memory is left by the $started service processes skewbench ended"

wall_clock=skewbench hostile sleeper plain "$rule_body" --sleep
run_hostile sleeper
if [[ $code -ne 0 ]] || ! grep -q '"verdict": "SAFE"' "$(evidence_of sleeper)"; then
  cat "$scratch/sleeper.txt"
  echo "FAIL: a Python service that sleeps, under \"wall_clock\": \"skewbench\", exited $code, not 0 with SAFE"
  exit 1
fi
echo "ok: a Python service that sleeps runs under \"wall_clock\": \"skewbench\" and reads SAFE"
