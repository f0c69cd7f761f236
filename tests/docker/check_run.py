#!/usr/bin/env python3
"""Checks for tests/docker/compose_test.sh. Each subcommand prints what it
checked and exits 0 when everything holds, 1 otherwise.

  check_run.py config RESOLVED_SHIPPED RESOLVED_WITH_OVERRIDE
      every service on the host network; the remote-effect's arguments are the
      shipped ones apart from --host and --port
  check_run.py evidence RESULTS_DIR UID GID GIT_COMMIT
      exactly one compose run under RESULTS_DIR/runs, `latest` points at it,
      10/10, every scenario passed, PostgreSQL 17, the commit the image was
      built from, and every file owned by UID:GID
  check_run.py remote-state RUN_DIR BASE_URL
      the remote-effect at BASE_URL (a different process from the one in the
      evidence) still holds every operation's effects, POSTs and status
"""
import http.client
import json
import os
import sys
import urllib.parse

import yaml

failures = []


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
    return finish("every service is on the host network; remote-effect runs with the shipped arguments")


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


def check_evidence(results_dir, uid, gid, commit):
    runs_dir = os.path.join(results_dir, "runs")
    runs = sorted(os.listdir(runs_dir)) if os.path.isdir(runs_dir) else []
    if not require(len(runs) == 1 and "-compose-" in runs[0], f"expected one *-compose-* run, found {runs}"):
        return finish("")
    run_dir = os.path.join(runs_dir, runs[0])
    latest = os.path.join(results_dir, "latest")
    require(os.path.islink(latest) and os.readlink(latest) == f"runs/{runs[0]}",
            f"results/latest must point at runs/{runs[0]}")
    result = load(os.path.join(run_dir, "result.json"))
    summary = load(os.path.join(run_dir, "summary.json"))
    require((result.get("score"), result.get("max_score")) == (10, 10),
            f"score {result.get('score')}/{result.get('max_score')}, expected 10/10")
    require(summary.get("outcome") == "pass", f"summary outcome {summary.get('outcome')!r}")
    rows = summary.get("scenarios", [])
    require(len(rows) == 3 and all(r.get("pass") is True for r in rows), f"scenario rows: {rows}")
    environment = summary.get("environment", {})
    server = environment.get("postgresql", {}).get("server_version_num", 0)
    require(server // 10000 == 17, f"PostgreSQL server_version_num {server}, expected major 17")
    require(environment.get("harness", {}).get("git_commit") == commit,
            f"evidence records commit {environment.get('harness', {}).get('git_commit')!r}, image built from {commit}")
    paths = check_owner(runs_dir, uid, gid)
    require((os.lstat(latest).st_uid, os.lstat(latest).st_gid) == (uid, gid), "results/latest owner")
    return finish(f"{runs[0]}: 10/10, outcome pass, PostgreSQL {server}, {paths} paths owned by {uid}:{gid}")


def get_status(base_url, operation_id, logical_time_s):
    url = urllib.parse.urlsplit(base_url)
    # http.client, not urllib.request: no proxy from the environment applies.
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    connection.request("GET", "/status/" + urllib.parse.quote(operation_id, safe=""),
                       headers={"X-Logical-Time": str(logical_time_s)})
    response = connection.getresponse()
    body = json.loads(response.read())
    connection.close()
    require(response.status == 200, f"GET /status/{operation_id}: HTTP {response.status} {body}")
    return body


def check_remote_state(run_dir, base_url):
    scenario_dir = os.path.join(run_dir, "scenarios")
    names = sorted(os.listdir(scenario_dir))
    require(len(names) == 3, f"expected 3 scenario files, found {names}")
    for name in names:
        evidence = load(os.path.join(scenario_dir, name))
        final = evidence["final"]
        status = get_status(base_url, evidence["operation_id"], final["evaluation_time_s"])
        for field in ("effect_count", "post_requests", "ack_drops", "status"):
            require(status.get(field) == final[field],
                    f"{name}: {field} is {status.get(field)!r} now, {final[field]!r} in the evidence")
        require(status.get("boot_id") != evidence["environment"]["remote_effect"]["boot_id"],
                f"{name}: the remote-effect answering is the one that ran the scenario")
    return finish(f"a new remote-effect process holds the effects, POSTs and status of all {len(names)} operations")


def main(argv):
    if argv[1:2] == ["config"] and len(argv) == 4:
        return check_config(argv[2], argv[3])
    if argv[1:2] == ["evidence"] and len(argv) == 6:
        return check_evidence(argv[2], int(argv[3]), int(argv[4]), argv[5])
    if argv[1:2] == ["remote-state"] and len(argv) == 4:
        return check_remote_state(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
