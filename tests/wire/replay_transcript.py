#!/usr/bin/env python3
"""Replays a published driver's recorded request sequence against a service
and compares every answer with the recorded one.

  replay_transcript.py BENCHMARK remote-effect PATH   # our remote-effect
  replay_transcript.py BENCHMARK standin              # tests/wire/published_standin.py

The service is started, SIGKILLed and restarted, and its state folder removed
and created, where the transcript says the published driver did; the state
folder stands for the published container's volume (STATE_DB=/state/... maps
into it) and the other variables of "docker run -e" are passed as they were.

Against remote-effect, every answer must have the recorded HTTP status (a
dropped ack: a clean close without a byte) and every field the published
driver reads (driver.fields_read) with the recorded value, except the fields
that name the published service itself (IDENTITY_FIELDS). Against the
stand-in, every answer body must equal the recorded one, field for field, the
identity fields present with values of its own.
Exit 0 when everything matched, 1 otherwise (each difference is printed).
"""

import json
import os
import shutil
import sys
import tempfile

import wire


def remote_effect_start(binary):
    def start(env):
        def ready(proc):
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("remote-effect exited before its ready line (exit %s)" % proc.wait())
            return json.loads(line)["port"]
        return wire.Process([binary, "--host", "127.0.0.1", "--port", "0"], env, ready)
    return start


def standin_start(benchmark):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "published_standin.py")

    def start(env):
        def ready(proc):
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("the stand-in exited before its ready line (exit %s)" % proc.wait())
            return json.loads(line)["port"]
        return wire.Process([sys.executable, script, "--benchmark", benchmark, "--port", "0"], env, ready)
    return start


def service_env(started, state_dir, scratch):
    """The environment of a "docker run -e ...": the recorded variables, with
    a state path inside the container's volume mapped into state_dir. A
    service given no state path (#015 keeps it in memory) gets a file of its
    own per start, which no later start sees."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STATE_DB", "IDEMPOTENCY_MODE"))}
    for name, value in (started.get("env") or {}).items():
        if name == "STATE_DB":
            value = os.path.join(state_dir, os.path.basename(value))
        env[name] = value
    if "STATE_DB" not in env:
        env["STATE_DB"] = os.path.join(scratch, "process-memory-%s.db" % os.urandom(4).hex())
    return env


def compare(event, answer, exact, placeholders, failures):
    recorded = event["response"]
    if recorded is None:
        if not answer.closed_silently:
            failures.add(event, "the recording has a dropped ack (a clean close without a byte); got %s"
                         % (answer.status,))
        return
    if answer.closed_silently:
        failures.add(event, "closed without an answer; the recording has %d" % recorded["status"])
        return
    if answer.status != recorded["status"]:
        failures.add(event, "HTTP %s, the recording has %s" % (answer.status, recorded["status"]))
    body = answer.body if isinstance(answer.body, dict) else {}
    if exact:
        # The fields naming the service are there, with values of its own.
        if not wire.same_value(wire.without_identity(recorded["body"]), wire.without_identity(answer.body),
                               placeholders):
            failures.add(event, "body %s, the recording has %s" % (json.dumps(answer.body, sort_keys=True),
                                                                   json.dumps(recorded["body"], sort_keys=True)))
        return
    for field in event["driver"]["fields_read"]:
        if field in wire.IDENTITY_FIELDS:
            continue
        if field not in body:
            failures.add(event, "no field %r, which the published driver reads" % field)
        elif not wire.same_value(recorded["body"][field], body[field], placeholders):
            failures.add(event, "%s = %s, the recording has %s"
                         % (field, json.dumps(body[field]), json.dumps(recorded["body"][field])))


def replay(benchmark, start, exact):
    document = wire.transcript(benchmark)
    failures = wire.Failures(benchmark)
    placeholders = wire.Placeholders()
    scratch = tempfile.mkdtemp(prefix="skewbench-wire-")
    state_dir = os.path.join(scratch, "volume")
    os.makedirs(state_dir)
    process = None
    try:
        for event in document["events"]:
            action = (event.get("service") or {}).get("action")
            if action == "state_volume_removed":
                shutil.rmtree(state_dir, ignore_errors=True)
            elif action == "state_volume_created":
                os.makedirs(state_dir, exist_ok=True)
            elif action == "service_started":
                process = start(service_env(event["service"], state_dir, scratch))
            elif action == "service_killed":
                process.kill()
                process = None
            elif "request" in event:
                compare(event, wire.send(process.port, event["request"]), exact, placeholders, failures)
    finally:
        if process:
            process.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    what = "the published #%s driver's %d requests, %s" % (
        benchmark, len(wire.exchanges(document)),
        "every answer body as recorded" if exact else "every status and every field the driver reads as recorded")
    return failures.report(what)


def main(argv):
    if len(argv) < 3 or argv[1] not in wire.BENCHMARKS or argv[2] not in ("remote-effect", "standin"):
        print(__doc__)
        return 2
    benchmark, service = argv[1], argv[2]
    if service == "remote-effect":
        if len(argv) != 4:
            print("remote-effect needs the path of its executable")
            return 2
        return replay(benchmark, remote_effect_start(argv[3]), exact=False)
    return replay(benchmark, standin_start(benchmark), exact=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
