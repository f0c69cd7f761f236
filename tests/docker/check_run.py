#!/usr/bin/env python3
"""Checks for tests/docker/compose_test.sh. Each subcommand prints what it
checked and exits 0 when everything holds, 1 otherwise.

  check_run.py config RESOLVED_SHIPPED RESOLVED_WITH_OVERRIDE
      every service on the host network; the remote-effect's arguments are the
      shipped ones apart from --host and --port
  check_run.py evidence RESULTS_DIR UID GID GIT_COMMIT SCENARIOS_DIR
      the three runs the shipped skewbench command makes: RESULTS_DIR/runs
      holds <run> (every scenario file of SCENARIOS_DIR but #016's), <run>-016
      (#016's) and <run>-real-clocks (SCENARIOS_DIR/instances/, in real-clock
      mode) and nothing else; `latest` points at <run>; every scenario
      passed; result.json (#018), result-015.json, result-017.json and
      result-019.json of <run> and result-016.json of <run>-016 score 10/10
      (<run>-016's result.json has every #018 check "not run", none failed);
      every step of <run>-real-clocks lists each instance's clock, read by the
      instance as set; PostgreSQL 17; the commit the image was built from;
      every path owned by UID:GID
  check_run.py snapshot RUN_DIR BASE_URL SNAPSHOT_JSON
      the remote-effect at BASE_URL, a new process on the state of the one that
      ran RUN_DIR's scenarios, reports each operation's effects, POSTs,
      acknowledgement drops and status as the evidence does; writes its /health
      and every operation's /status to SNAPSHOT_JSON
  check_run.py survived SNAPSHOT_JSON BASE_URL
      the remote-effect at BASE_URL is another process (another boot_id) and
      reports the snapshot's temporal epoch and every operation's /status
      unchanged (effects, key records, POSTs, acknowledgement drops)
"""
import glob
import http.client
import json
import os
import sys
import urllib.parse

import yaml

failures = []

# The shipped command runs #016's scenario files in a second run of their own,
# and scenarios/instances/ on real clocks in a third.
SEPARATE_BENCHMARK = "016"
REAL_CLOCKS = "real-clocks"
# Which published result files each run must hold at 10/10.
FIRST_RUN_RESULTS = ("result.json", "result-015.json", "result-017.json", "result-019.json")
SECOND_RUN_RESULTS = ("result-016.json",)


def require(condition, message):
    if not condition:
        failures.append(message)
    return condition


def finish(ok_message):
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print(f"ok: {ok_message}")
    return 1 if failures else 0


def without_address(command):
    return [arg for arg in command if not arg.startswith(("--host=", "--port="))]


def check_config(shipped_path, overridden_path):
    shipped = yaml.safe_load(open(shipped_path))
    overridden = yaml.safe_load(open(overridden_path))
    services = overridden.get("services", {})
    require(set(services) == set(shipped.get("services", {})), "the override must not add or drop services")
    for name, service in services.items():
        require(service.get("network_mode") == "host", f"service {name!r} is not on the host network")
        require(not service.get("networks"), f"service {name!r} joins a network")
        require(not service.get("ports"), f"service {name!r} publishes ports")
    require(not overridden.get("networks"), "the resolved configuration declares networks")
    remote_shipped = shipped["services"]["remote-effect"].get("command", [])
    remote_test = services.get("remote-effect", {}).get("command", [])
    require(without_address(remote_shipped) == without_address(remote_test),
            f"remote-effect arguments differ beyond --host/--port: {remote_test} vs {remote_shipped}")
    require("--host=127.0.0.1" in remote_test, "remote-effect must listen on 127.0.0.1 in the test")
    skewbench_shipped = shipped["services"]["skewbench"]
    skewbench_test = services.get("skewbench", {})
    for key in ("entrypoint", "command", "user", "volumes"):
        require(skewbench_test.get(key) == skewbench_shipped.get(key), f"skewbench's {key} differs from the shipped one")
    return finish("every service is on the host network; remote-effect and skewbench run with the shipped commands")


def load(path):
    with open(path) as f:
        return json.load(f)


def check_owner(root, uid, gid):
    paths = [root]
    for directory, subdirs, files in os.walk(root):
        paths += [os.path.join(directory, n) for n in subdirs + files]
    wrong = [p for p in paths if (os.lstat(p).st_uid, os.lstat(p).st_gid) != (uid, gid)]
    require(not wrong, f"{len(wrong)} of {len(paths)} paths not owned by {uid}:{gid}, e.g. {wrong[:3]}")
    return len(paths)


def check_score(run_dir, name):
    path = os.path.join(run_dir, name)
    if not require(os.path.isfile(path), f"{path} is missing"):
        return
    result = load(path)
    require((result.get("score"), result.get("max_score")) == (10, 10),
            f"{path}: score {result.get('score')}/{result.get('max_score')}, expected 10/10")
    require(result.get("outcome") == "pass", f"{path}: outcome {result.get('outcome')!r}, expected 'pass'")


def check_nothing_of_018_ran(run_dir):
    """The #016 run has no #018 scenario: its result.json may report none of
    #018's checks as passed, failed or in error."""
    result = load(os.path.join(run_dir, "result.json"))
    checks = result.get("score_coverage", {}).get("checks", {})
    ran = {status: names for status, names in checks.items() if status != "not_run" and names}
    require(not ran and len(checks.get("not_run", [])) == 5 and result.get("score") == 0,
            f"{run_dir}/result.json: #018 checks that ran without a #018 scenario: {ran}")


def check_summary(run_dir, scenario_ids, commit):
    summary = load(os.path.join(run_dir, "summary.json"))
    require(summary.get("outcome") == "pass", f"{run_dir}: summary outcome {summary.get('outcome')!r}")
    rows = summary.get("scenarios", [])
    require(sorted(r.get("id") for r in rows) == sorted(scenario_ids),
            f"{run_dir}: scenarios {[r.get('id') for r in rows]}, expected {sorted(scenario_ids)}")
    require(all(r.get("pass") is True for r in rows), f"{run_dir}: failing rows {[r for r in rows if not r.get('pass')]}")
    environment = summary.get("environment", {})
    server = environment.get("postgresql", {}).get("server_version_num", 0)
    require(server // 10000 == 17, f"{run_dir}: PostgreSQL server_version_num {server}, expected major 17")
    require(environment.get("harness", {}).get("git_commit") == commit,
            f"{run_dir}: evidence records commit {environment.get('harness', {}).get('git_commit')!r}, image built from {commit}")
    return server


def scenario_ids(scenarios_dir):
    """(ids of the first run, ids of the #016 run), from the shipped files."""
    first, second = [], []
    for path in sorted(glob.glob(os.path.join(scenarios_dir, "*.json"))):
        scenario_id = load(path)["id"]
        (second if os.path.basename(path).startswith(SEPARATE_BENCHMARK + "-") else first).append(scenario_id)
    return first, second


def instances_of(scenario):
    """How many instances of the service a scenario file runs."""
    per_node = scenario.get("remote", {}).get("instances") == "per_node"
    return len(scenario.get("nodes", [])) if per_node else 1


def check_real_clocks(run_dir, scenarios_dir):
    """Every scenario ran on real clocks, and after every step each of its
    instances (one per node) read the wall clock skewbench set: asked of the
    instance, not assumed. Returns how many readings were checked."""
    summary = load(os.path.join(run_dir, "summary.json"))
    mode = summary.get("environment", {}).get("clock", {}).get("mode")
    require(mode == "real", f"{run_dir}: clock mode {mode!r}, expected 'real'")
    expected = {}
    for path in glob.glob(os.path.join(scenarios_dir, "*.json")):
        scenario = load(path)
        expected[scenario["id"]] = instances_of(scenario)
    readings = 0
    for path in sorted(glob.glob(os.path.join(run_dir, "scenarios", "*.json"))):
        evidence = load(path)
        count = expected.get(evidence.get("scenario_id"))
        timeline = evidence.get("timeline", [])
        require(timeline, f"{path}: no step")
        for step in timeline:
            clocks = step.get("process_clocks") or []
            require(len(clocks) == count,
                    f"{path}: step {step.get('index')} lists {len(clocks)} process clocks, expected {count}")
            for clock in clocks:
                readings += 1
                require(isinstance(clock.get("read_s"), int) and clock.get("read_s") == clock.get("set_s"),
                        f"{path}: step {step.get('index')}: {clock.get('instance')} read {clock.get('read_s')!r}, "
                        f"set {clock.get('set_s')!r}")
    return readings


def check_evidence(results_dir, uid, gid, commit, scenarios_dir):
    runs_dir = os.path.join(results_dir, "runs")
    runs = sorted(os.listdir(runs_dir)) if os.path.isdir(runs_dir) else []
    if not require(len(runs) == 3 and "-compose-" in runs[0] and runs[1] == f"{runs[0]}-{SEPARATE_BENCHMARK}"
                   and runs[2] == f"{runs[0]}-{REAL_CLOCKS}",
                   f"expected runs <utc>-compose-<host>, <utc>-compose-<host>-016 and "
                   f"<utc>-compose-<host>-{REAL_CLOCKS}, found {runs}"):
        return finish("")
    first, second, third = (os.path.join(runs_dir, run) for run in runs)
    latest = os.path.join(results_dir, "latest")
    require(os.path.islink(latest) and os.readlink(latest) == f"runs/{runs[0]}",
            f"results/latest must point at runs/{runs[0]}")
    first_ids, second_ids = scenario_ids(scenarios_dir)
    server = check_summary(first, first_ids, commit)
    check_summary(second, second_ids, commit)
    instances_dir = os.path.join(scenarios_dir, "instances")
    instance_ids = [load(path)["id"] for path in sorted(glob.glob(os.path.join(instances_dir, "*.json")))]
    check_summary(third, instance_ids, commit)
    readings = check_real_clocks(third, instances_dir)
    for name in FIRST_RUN_RESULTS:
        check_score(first, name)
    for name in SECOND_RUN_RESULTS:
        check_score(second, name)
    check_nothing_of_018_ran(second)
    paths = check_owner(runs_dir, uid, gid)
    require((os.lstat(latest).st_uid, os.lstat(latest).st_gid) == (uid, gid), "results/latest owner")
    return finish(f"{runs[0]} ({len(first_ids)} scenarios), {runs[1]} ({len(second_ids)}) and {runs[2]} "
                  f"({len(instance_ids)}, {readings} process clocks read as set): every scenario passed, "
                  f"{len(FIRST_RUN_RESULTS) + len(SECOND_RUN_RESULTS)} published results 10/10, PostgreSQL {server}, "
                  f"commit {commit}, {paths} paths owned by {uid}:{gid}")


def get_json(base_url, path, logical_time_s=None):
    url = urllib.parse.urlsplit(base_url)
    # http.client, not urllib.request: no proxy from the environment applies.
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    headers = {} if logical_time_s is None else {"X-Logical-Time": str(logical_time_s)}
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = json.loads(response.read())
    connection.close()
    require(response.status == 200, f"GET {path}: HTTP {response.status} {body}")
    return body


def get_status(base_url, operation_id, logical_time_s):
    return get_json(base_url, "/status/" + urllib.parse.quote(operation_id, safe=""), logical_time_s)


def take_snapshot(run_dir, base_url, snapshot_path):
    health = get_json(base_url, "/health")
    operations = []
    scenario_dir = os.path.join(run_dir, "scenarios")
    for name in sorted(os.listdir(scenario_dir)):
        evidence = load(os.path.join(scenario_dir, name))
        final = evidence["final"]
        status = get_status(base_url, evidence["operation_id"], final["evaluation_time_s"])
        for field in ("effect_count", "post_requests", "ack_drops", "status"):
            require(status.get(field) == final[field],
                    f"{name}: {field} is {status.get(field)!r} now, {final[field]!r} in the evidence")
        # compose stopped the container that ran the scenarios; this one is its replacement.
        require(status.get("boot_id") not in (None, evidence["environment"]["remote_effect"]["boot_id"]),
                f"{name}: the remote-effect answering is the process that ran the scenario")
        operations.append({"scenario": name, "operation_id": evidence["operation_id"],
                           "evaluation_time_s": final["evaluation_time_s"], "status": status})
    require(any(op["status"]["effect_count"] > 0 for op in operations), "no operation has an effect")
    with open(snapshot_path, "w") as f:
        json.dump({"health": health, "operations": operations}, f, indent=1)
    return finish(f"a new remote-effect process reports what the evidence says for {len(operations)} operations "
                  f"(temporal epoch {health.get('temporal_epoch')})")


def check_survived(snapshot_path, base_url):
    snapshot = load(snapshot_path)
    health = get_json(base_url, "/health")
    old_boot_id = snapshot["operations"][0]["status"]["boot_id"]
    require(health.get("boot_id") not in (None, old_boot_id), "the remote-effect answering is the process of the snapshot")
    require(health.get("temporal_epoch") == snapshot["health"]["temporal_epoch"],
            f"temporal epoch {health.get('temporal_epoch')}, {snapshot['health']['temporal_epoch']} before the restart")
    for op in snapshot["operations"]:
        now = get_status(base_url, op["operation_id"], op["evaluation_time_s"])
        before = op["status"]
        # boot_id names the process, which was replaced on purpose.
        changed = {key: (before.get(key), now.get(key)) for key in before.keys() | now.keys()
                   if key != "boot_id" and before.get(key) != now.get(key)}
        require(not changed, f"{op['scenario']}: /status changed across the restart (before, after): {changed}")
    return finish(f"a new remote-effect process (boot {health.get('boot_id')}) holds the temporal epoch and every "
                  f"effect, key record and POST of all {len(snapshot['operations'])} operations")


def main(argv):
    if argv[1:2] == ["config"] and len(argv) == 4:
        return check_config(argv[2], argv[3])
    if argv[1:2] == ["evidence"] and len(argv) == 7:
        return check_evidence(argv[2], int(argv[3]), int(argv[4]), argv[5], argv[6])
    if argv[1:2] == ["snapshot"] and len(argv) == 5:
        return take_snapshot(argv[2], argv[3], argv[4])
    if argv[1:2] == ["survived"] and len(argv) == 4:
        return check_survived(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
