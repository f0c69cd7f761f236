#!/usr/bin/env python3
"""skewbench against a stand-in of a published service, as a user who keeps
that service would run it:

  skewbench_drives_standin.py BENCHMARK SKEWBENCH [SCENARIO_BENCHMARK]

runs scenarios/<SCENARIO_BENCHMARK or BENCHMARK>-*.json against
published_standin.py --benchmark BENCHMARK: by --remote-url for a running
stand-in, or, where a scenario restarts the service or switches its dedupe
mode (#016), by --remote-command, so that skewbench starts, kills and restarts
the stand-in itself.

With the benchmark's own scenarios, skewbench must exit 0 and its
result-0NN.json must hold every published field of that benchmark
(tests/data/published/) with the published type and value, and every check
2 points. With another benchmark's scenarios, fields the stand-in does not
report may fail an expectation (exit 1), but no scenario may end in ERROR.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import wire

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "published_standin.py")
PUBLISHED = {"015": "015-http-idempotency-boundary", "016": "016-idempotency-state-durability",
             "017": "017-idempotency-ttl-replay", "018": "018-idempotency-clock-skew",
             "019": "019-idempotency-clock-rollback"}


def at_dotted_path(document, dotted):
    value = document
    for part in dotted.replace("[", ".").replace("]", "").split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return "<absent>"
    return value


def published_differences(benchmark, out_dir):
    with open(os.path.join(wire.SOURCE_DIR, "tests", "data", "published", PUBLISHED[benchmark] + ".json")) as f:
        expected = json.load(f)
    with open(os.path.join(out_dir, expected["result_file"])) as f:
        result = json.load(f)
    lines = []
    for path, value in expected["fields"].items():
        actual = at_dotted_path(result, path)
        if type(actual) is not type(value) or actual != value:
            lines.append("%s: %s, published %s" % (path, json.dumps(actual), json.dumps(value)))
    for check in result["checks"]:
        if check["points"] != 2:
            lines.append("check %s: %s points" % (check["id"], check["points"]))
    if len(result["checks"]) != len(expected["checks"]) or result["score"] != 10:
        lines.append("score %s with %d checks; published 10 with %d" % (
            result["score"], len(result["checks"]), len(expected["checks"])))
    return len(expected["fields"]), lines


# Of a clock-less service: the published checks that read the key records it
# does not report, and the unsafe scenario, whose replay it deduplicates.
CLOCKLESS_FINDINGS = {
    "017": {"result": "result-017.json", "unsafe": "017-unsafe-short-ttl",
            "not_measured": ["ttl_record_is_active_then_expires_while_effect_persists",
                             "authoritative_reconcile_after_ttl_expiry_avoids_replay"]},
    "018": {"result": "result.json", "unsafe": "018-unsafe-node-local",
            "not_measured": ["same_record_yields_active_and_expired_under_clock_disagreement"]},
}


def cross_differences(run, summary, out_dir, scenarios_of):
    """What of docs/wire-compatibility.md's account of a clock-less service
    did not hold: exit 1 (expectations fail, nothing else), every failed
    active_idempotency_records expectation observed null, the checks that
    read it not measured, and the unsafe scenario SAFE (no duplicate)."""
    lines = []
    if run.returncode != 1:
        lines.append("exit %d; expectations on what the service does not report must fail (exit 1)" % run.returncode)
    for row in summary["scenarios"]:
        with open(os.path.join(out_dir, "scenarios", row["id"] + ".json")) as f:
            evidence = json.load(f)
        for check in evidence["checks"]:
            if check["id"].endswith(".active_idempotency_records") and check["observed"] is not None:
                lines.append("%s: %s observed %s, not null" % (row["id"], check["id"], json.dumps(check["observed"])))
    findings = CLOCKLESS_FINDINGS.get(scenarios_of)
    if findings:
        with open(os.path.join(out_dir, findings["result"])) as f:
            checks = {c["id"]: c["status"] for c in json.load(f)["checks"]}
        for check in findings["not_measured"]:
            if checks.get(check) != "not_measured":
                lines.append("published check %s is %s, not not_measured" % (check, checks.get(check)))
        verdicts = {row["id"]: row["verdict"] for row in summary["scenarios"]}
        if verdicts.get(findings["unsafe"]) != "SAFE":
            lines.append("%s is %s; a service that never expires a key deduplicates its replay (SAFE)"
                         % (findings["unsafe"], verdicts.get(findings["unsafe"])))
    return lines


def main(argv):
    if len(argv) not in (3, 4) or argv[1] not in wire.BENCHMARKS:
        print(__doc__)
        return 2
    benchmark, skewbench = argv[1], argv[2]
    scenarios_of = argv[3] if len(argv) == 4 else benchmark
    files = sorted(glob.glob(os.path.join(wire.SOURCE_DIR, "scenarios", scenarios_of + "-*.json")))
    scratch = tempfile.mkdtemp(prefix="skewbench-wire-")
    out_dir = os.path.join(scratch, "out")
    command = [skewbench, "run", *files, "--out", out_dir, "-q"]
    standin = None
    try:
        restarts = any('"restart_remote"' in open(f).read() for f in files)
        if restarts:
            command += ["--remote-command", "%s %s --benchmark %s --port {port}" % (sys.executable, STANDIN, benchmark)]
        else:
            env = dict(os.environ, STATE_DB=os.path.join(scratch, "standin.db"))
            standin = subprocess.Popen([sys.executable, STANDIN, "--benchmark", benchmark, "--port", "0"], env=env,
                                       stdout=subprocess.PIPE, text=True)
            port = json.loads(standin.stdout.readline())["port"]
            command += ["--remote-url", "http://127.0.0.1:%d" % port]
        print("$ " + " ".join(command))
        run = subprocess.run(command, capture_output=True, text=True)
        print(run.stdout + run.stderr)
        with open(os.path.join(out_dir, "summary.json")) as f:
            summary = json.load(f)
        errors = ["%s (%s)" % (s["id"], s["error"]) for s in summary["scenarios"] if s["verdict"] == "ERROR"]
        if errors:
            print("FAILED: ERROR in %s against the #%s stand-in" % (", ".join(errors), benchmark))
            return 1
        if scenarios_of != benchmark:
            lines = cross_differences(run, summary, out_dir, scenarios_of)
            if lines:
                print("\n".join(lines))
                print("FAILED: #%s scenarios against the #%s stand-in" % (scenarios_of, benchmark))
                return 1
            print("ok: #%s scenarios against the #%s stand-in: no ERROR (exit %d), what it does not report is not "
                  "observed, and the unsafe scenario finds no duplicate" % (scenarios_of, benchmark, run.returncode))
            return 0
        if run.returncode != 0:
            print("FAILED: skewbench exited %d" % run.returncode)
            return 1
        count, lines = published_differences(benchmark, out_dir)
        if lines:
            print("\n".join(lines))
            print("FAILED: %d of %d published #%s fields differ" % (len(lines), count, benchmark))
            return 1
        print("ok: skewbench against the #%s stand-in gives all %d published fields, 10/10" % (benchmark, count))
        return 0
    finally:
        if standin:
            standin.kill()
            standin.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
