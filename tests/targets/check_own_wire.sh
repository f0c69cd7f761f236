#!/usr/bin/env bash
# ctest -L targets: a service of its own wire (examples/services/python-sqlite:
# its own route, body and statuses, no endpoint of skewbench's) under
# scenarios/targets/018-two-instances-skewed.json, its effects counted at
# skewbench's effect sink.
#
#   check_own_wire.sh SKEWBENCH SOURCE_DIR
#
# 0. Every example's target file conforms to schemas/target.schema.json.
# 1. The run exits 0: CONFLICT with 2 effects, both sink calls in the
#    scenario's evidence (one from each instance), and the folder verifies.
# 2. The service's word changes nothing: a copy that answers every charge
#    200 ("replayed") still reads CONFLICT, 2 effects; a copy that answers a
#    replay 201 ("applied") without charging again is an ERROR (exit 3), as
#    is one that stalls on a charge or dies on it.
#    It can fail: the same service with a sink rule that reads the operation
#    id from the wrong place exits 3, an ERROR naming the target, never a
#    verdict; and a scenario whose TTL is not the service's is exit 2.
# 3. A restart is a kill unless the target declares a graceful one, with its
#    stop signal: a service that saves its memory only on SIGINT tells them
#    apart (CONFLICT killed, SAFE stopped).
# 4. Readiness by a log line and by a port work; a service that exits before
#    it is ready, or never gets ready within its ready_timeout_s, is exit 3,
#    naming the target and why.
# 5. A scenario does not inherit another's failure: an instance that does not
#    start again in 016-instance-restart (an ERROR naming why) is started
#    before the next scenario, which gets its verdict.
set -euo pipefail
skewbench=${1:?usage: check_own_wire.sh SKEWBENCH SOURCE_DIR}
source_dir=${2:?usage: check_own_wire.sh SKEWBENCH SOURCE_DIR}
cd "$source_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
scenario=scenarios/targets/018-two-instances-skewed.json
example=examples/services/python-sqlite

python3 - <<'PY'
import glob, json, sys
import jsonschema
schema = json.load(open("schemas/target.schema.json"))
files = sorted(glob.glob("examples/services/*/target.json"))
if not files:
    sys.exit("FAIL: no target file under examples/services")
for f in files:
    jsonschema.validate(json.load(open(f)), schema)
print(f"ok: {len(files)} example target files conform to schemas/target.schema.json")
PY

set +e
"$skewbench" run "$scenario" --target "$example" --out "$scratch/run" -q >"$scratch/run.txt" 2>&1
code=$?
set -e
if [[ $code -ne 0 ]]; then
  cat "$scratch/run.txt"
  echo "FAIL: skewbench run --target $example exited $code, not 0"
  exit 1
fi
"$skewbench" verify "$scratch/run" >/dev/null
python3 - "$scratch/run/scenarios/018-two-instances-skewed.json" <<'PY'
import json, sys
evidence = json.load(open(sys.argv[1]))
final = evidence["final"]
assert evidence["verdict"] == "CONFLICT", evidence["verdict"]
assert final["effect_count"] == 2 and final["post_requests"] == 2, final
calls = evidence["effect_sink_calls"]
assert [c["operation_id"] for c in calls] == [evidence["operation_id"]] * 2, calls
assert sorted(c["instance"] for c in calls) == ["python-sqlite", "python-sqlite@2"], calls
assert all(c["applied"] and c["path"] == "/charges" for c in calls), calls
print("ok: CONFLICT, 2 effects counted at the sink, one call from each instance")
PY

# lying_copy NAME SED: a copy of the example as target NAME, its service
# changed by the sed expression SED.
lying_copy() { changed_copy "$example" "$1" "$2"; }

# The same service lying: every charge it makes is answered 200, "replayed"
# by its target's rules. The effects are counted at the sink, so the verdict
# is the same CONFLICT, 2 effects.
lying_copy liar 's/self.answer(201, payment)/self.answer(200, payment)/'
set +e
"$skewbench" run "$scenario" --target "$scratch/liar" --out "$scratch/liar-run" -q >"$scratch/liar.txt" 2>&1
set -e
python3 - "$scratch/liar-run/scenarios/018-two-instances-skewed.json" "$scratch/liar.txt" <<'PY'
import json, sys
evidence = json.load(open(sys.argv[1]))
replays = [e for step in evidence["timeline"] for e in step.get("exchanges", [])
           if (e.get("harness") or {}).get("answer_class") == "replayed"]
if not replays or evidence["verdict"] != "CONFLICT" or evidence["final"]["effect_count"] != 2:
    print(open(sys.argv[2]).read())
    sys.exit(f"FAIL: a service answering replayed while it charged again gave {evidence['verdict']}, "
             f"{evidence['final'].get('effect_count')} effects, {len(replays)} answers classed replayed")
print("ok: a service that says replayed while it charges again still reads CONFLICT, 2 effects, from the sink")
PY

# The other lie: a replay answered 201, "applied", as if it charged again
# while the provider saw one charge. No verdict may come of a service that
# claims an effect its provider never saw: an ERROR naming the target.
lying_copy claims 's/self.answer(200, json.loads(response))/self.answer(201, json.loads(response))/'
run_expecting 3 "$scratch/claims.txt" "a service that claims an effect its provider never saw" "ERROR" -- \
  run scenarios/targets/015-same-key-after-lost-ack.json --target "$scratch/claims" --out "$scratch/claims-run" -q
grep -q "target claims: POST /payments answered 201 (applied) but the effect sink took no call" \
  "$scratch/claims-run/scenarios/015-same-key-after-lost-ack.json" ||
  { echo "FAIL: the claiming service's ERROR does not say why in its evidence"; exit 1; }
echo "ok: a service that answers applied without a call at the sink is an ERROR naming the target (exit 3)"

# The same service, read from the wrong place: no verdict may come of it.
mkdir -p "$scratch/wrong-rule"
cp "$example/service.py" "$scratch/wrong-rule/"
python3 - "$example/target.json" "$scratch/wrong-rule/target.json" <<'PY'
import json, sys
target = json.load(open(sys.argv[1]))
target["name"] = "wrong-rule"
target["sink"]["operation_id"] = {"json_pointer": "/order_id"}
json.dump(target, open(sys.argv[2], "w"))
PY
run_expecting 3 "$scratch/wrong.txt" "a sink rule that finds no operation id" "ERROR" "target wrong-rule" -- \
  run "$scenario" --target "$scratch/wrong-rule" --out "$scratch/wrong" -q
echo "ok: a sink rule that finds no operation id is an ERROR naming the target (exit 3)"

sed 's/"ttl_s": 60/"ttl_s": 30/' "$scenario" >"$scratch/ttl-30.json"
run_expecting 2 "$scratch/ttl.txt" "a scenario whose TTL is not the service's" "ttl_s: 30 s, but target python-sqlite" -- \
  run "$scratch/ttl-30.json" --target "$example" --out "$scratch/ttl" -q
echo "ok: a scenario whose TTL is not the service's is refused (exit 2)"

# A service that stalls on a charge, and one that dies on it: an ERROR naming
# the target, within the run's --http-timeout, never a verdict.
mkdir -p "$scratch/stalls" "$scratch/dies"
cat >"$scratch/stalls/service.py" <<'PY'
import os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_POST(self):
        if sys.argv[2] == "dies":
            os._exit(1)
        threading.Event().wait()
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
PY
cp "$scratch/stalls/service.py" "$scratch/dies/"
python3 - "$example/target.json" "$scratch" <<'PY'
import json, sys
target = json.load(open(sys.argv[1]))
for name in ("stalls", "dies"):
    service = dict(target["service"], command="python3 {target_dir}/service.py {port} " + name)
    json.dump(dict(target, name=name, service=service, needs=["python3"]), open(f"{sys.argv[2]}/{name}/target.json", "w"))
PY
for kind in stalls dies; do
  started=$SECONDS
  run_expecting 3 "$scratch/$kind.txt" "a service that $kind on a charge" "ERROR .*target $kind: POST .*/payments" -- \
    run scenarios/targets/015-same-key-after-lost-ack.json --target "$scratch/$kind" --http-timeout 2 \
    --out "$scratch/$kind-run" -q
  ((SECONDS - started <= 60)) || { echo "FAIL: a service that $kind took $((SECONDS - started)) s to be an ERROR"; exit 1; }
done
echo "ok: a service that stalls on a charge, or dies on it, is an ERROR naming the target (exit 3)"

# Restarts as the target file declares them: a service that keeps its
# records in memory and saves them only when it gets SIGINT. Restarted with
# "kill" (the default: a crash) it loses them and charges again; restarted
# "graceful" with "stop": {"signal": "SIGINT"} it keeps them and replays.
mkdir -p "$scratch/graceful" "$scratch/killed"
cat >"$scratch/graceful/service.py" <<'PY'
import json, os, signal, sys, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port, provider, saved = int(sys.argv[1]), sys.argv[2], sys.argv[3] + ".records.json"
records = json.load(open(saved)) if os.path.exists(saved) else {}
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_GET(self):
        self.answer(200)
    def do_POST(self):
        order = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["order_id"]
        key = self.headers["Idempotency-Key"]
        if key in records:
            return self.answer(200)
        charge = json.dumps({"reference": order}).encode()
        urllib.request.urlopen(urllib.request.Request(provider + "/charges", data=charge, method="POST"), timeout=30).read()
        records[key] = order
        self.answer(201)
def save_and_exit(*_):
    json.dump(records, open(saved, "w"))
    os._exit(0)
signal.signal(signal.SIGINT, save_and_exit)
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
PY
cp "$scratch/graceful/service.py" "$scratch/killed/"
python3 - "$example/target.json" "$scratch" <<'PY'
import json, sys
target = json.load(open(sys.argv[1]))
service = dict(target["service"], command="python3 {target_dir}/service.py {port} {sink_url} {state_db}")
json.dump(dict(target, name="killed", service=service), open(f"{sys.argv[2]}/killed/target.json", "w"))
service.update(restart="graceful", stop={"signal": "SIGINT", "grace_s": 10})
json.dump(dict(target, name="graceful", service=service), open(f"{sys.argv[2]}/graceful/target.json", "w"))
PY
for kind in killed graceful; do
  "$skewbench" run scenarios/targets/016-instance-restart.json --target "$scratch/$kind" --out "$scratch/$kind-run" \
    -q >"$scratch/$kind.txt" 2>&1 || true
done
python3 - "$scratch" <<'PY'
import json, sys
def final(kind):
    evidence = json.load(open(f"{sys.argv[1]}/{kind}-run/scenarios/016-instance-restart.json"))
    return evidence["verdict"], evidence["final"]["effect_count"]
for kind, expected in (("killed", ("CONFLICT", 2)), ("graceful", ("SAFE", 1))):
    if final(kind) != expected:
        print(open(f"{sys.argv[1]}/{kind}.txt").read())
        sys.exit(f"FAIL: restarted as {kind}: {final(kind)}, not {expected}")
print("ok: an instance restarted as its target declares: killed it loses its memory (CONFLICT), "
      "stopped with its signal it keeps it (SAFE)")
PY

# Readiness by a line of its log and by its port; a service that exits before
# it is ready, or never gets ready, is an ERROR naming the target.
mkdir -p "$scratch/log-line" "$scratch/tcp-port" "$scratch/crash" "$scratch/silent"
cp "$example/service.py" "$scratch/log-line/"
cp "$example/service.py" "$scratch/tcp-port/"
python3 - "$example/target.json" "$scratch" <<'PY'
import json, sys
target = json.load(open(sys.argv[1]))
def write(name, service, **more):
    json.dump(dict(target, name=name, service=dict(target["service"], **service), **more),
              open(f"{sys.argv[2]}/{name}/target.json", "w"))
write("log-line", {"ready": {"log_line": "listening on"}})
write("tcp-port", {"ready": {"tcp_port": True}})
write("crash", {"command": "python3 -c \"import sys; sys.stderr.write('no provider configured\\n'); sys.exit(4)\""},
      needs=["python3"])
write("silent", {"command": "python3 -c \"import signal; signal.pause()\"", "ready": {"tcp_port": True},
                 "ready_timeout_s": 2}, needs=["python3"])
PY
for ready in log-line tcp-port; do
  "$skewbench" run "$scenario" --target "$scratch/$ready" --out "$scratch/$ready-run" -q >"$scratch/$ready.txt" 2>&1 || {
    cat "$scratch/$ready.txt"
    echo "FAIL: the service ready by $ready did not run as expected"
    exit 1
  }
done
echo "ok: a service is ready when its log holds the line its target file names, or when its port accepts"
run_expecting 3 "$scratch/silent.txt" "a service that never gets ready" \
  "cannot start target silent (silent): .*not ready within 2000 ms .*does not accept a connection" -- \
  run "$scenario" --target "$scratch/silent" --out "$scratch/silent-run" -q
echo "ok: a service that never gets ready is an ERROR naming the target and why (exit 3)"
run_expecting 3 "$scratch/crash.txt" "a service that exits before it is ready" \
  "cannot start target crash (crash): .*exited with code 4.*no provider configured" -- \
  run "$scenario" --target "$scratch/crash" --out "$scratch/crash-run" -q
echo "ok: a service that exits before it is ready is an ERROR naming the target and what it said (exit 3)"

# The second start of this service fails; the first and the third succeed.
mkdir -p "$scratch/second-start-fails"
cp "$example/service.py" "$scratch/second-start-fails/"
cat >"$scratch/second-start-fails/start.sh" <<'SH'
starts=$(cat "$1.starts" 2>/dev/null || echo 0)
echo $((starts + 1)) >"$1.starts"
if [ "$starts" = 1 ]; then echo "the second start fails" >&2; exit 5; fi
shift
exec "$@"
SH
python3 - "$example/target.json" "$scratch" <<'PY'
import json, sys
target = json.load(open(sys.argv[1]))
command = "sh {target_dir}/start.sh {state_db} " + target["service"]["command"]
json.dump(dict(target, name="second-start-fails", service=dict(target["service"], command=command)),
          open(f"{sys.argv[2]}/second-start-fails/target.json", "w"))
PY
code=0
"$skewbench" run scenarios/targets/016-instance-restart.json scenarios/targets/015-same-key-after-lost-ack.json \
  --target "$scratch/second-start-fails" --out "$scratch/second-start-fails-run" >"$scratch/second-start-fails.txt" 2>&1 ||
  code=$?
python3 - "$scratch/second-start-fails-run" "$code" "$scratch/second-start-fails.txt" <<'PY'
import json, sys
out, code, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def verdict(scenario):
    evidence = json.load(open(f"{out}/scenarios/{scenario}.json"))
    return evidence["verdict"], evidence.get("error") or ""
restart, after = verdict("016-instance-restart"), verdict("015-same-key-after-lost-ack")
if code != 3 or restart[0] != "ERROR" or "exited with code 5" not in restart[1] or after[0] != "SAFE":
    print(open(log).read())
    sys.exit(f"FAIL: exit {code}; 016-instance-restart {restart}; the scenario after it {after}")
if "is not running" not in open(log).read():
    print(open(log).read())
    sys.exit("FAIL: the instance started again was not said")
print("ok: an instance that did not start again is an ERROR there, and is started for the next scenario (SAFE)")
PY
