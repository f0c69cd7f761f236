"""What the wire tests share: the recorded transcripts, one raw HTTP exchange
per connection (as the published drivers make them), and the comparison of an
answer with a recorded one.

The transcripts in tests/data/wire/ were recorded from the published drivers
and services of #015-#019 (each file's "source" names them, its
"reading_guide" what every field means). Values that differ between runs are
placeholders there: <boot_id:N> one per service process, <hostname:N>,
<state_db:N>, <http-date>, <port>, <content-length>.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

# skewbench run by these tests speaks as anywhere else, also when the suite
# runs under GitHub Actions: no annotations, nothing in the job summary.
os.environ.pop("GITHUB_ACTIONS", None)
os.environ.pop("GITHUB_STEP_SUMMARY", None)

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = ("015", "016", "017", "018", "019")

# Health fields that name the published service itself: its name, its host
# and its PID (1 in the published container). A check of these is a check of
# identity, which remote-effect does not impersonate.
IDENTITY_FIELDS = {"service", "hostname", "pid", "service_instance"}



def without_identity(body):
    """The body with IDENTITY_FIELDS present but blanked, so that two answers
    compare equal when they differ only in whose service they name."""
    if not isinstance(body, dict):
        return body
    return {k: ("<identity>" if k in IDENTITY_FIELDS else v) for k, v in body.items()}


PLACEHOLDER = re.compile(r"^<([a-z_-]+)(?::(\d+))?>$")


def transcript(benchmark):
    with open(os.path.join(SOURCE_DIR, "tests", "data", "wire", benchmark + "-transcript.json")) as f:
        return json.load(f)


def exchanges(document):
    """The events of a transcript that are HTTP exchanges (not service starts and kills)."""
    return [e for e in document["events"] if "request" in e]


class Answer:
    """One answer as read off the socket: status, headers, JSON body (or None);
    closed_silently when the service closed without sending a byte."""

    def __init__(self, status=None, headers=None, body=None, raw=b"", closed_silently=False):
        self.status = status
        self.headers = headers or {}
        self.body = body
        self.raw = raw
        self.closed_silently = closed_silently


def send(port, request, timeout_s=5.0):
    """Sends a recorded request as it was sent (headers in order and case, the
    Host pointed at this port) on a connection of its own, and reads the answer
    until the service closes the connection."""
    lines = ["%s %s %s" % (request["method"], request["target"], request.get("version", "HTTP/1.1"))]
    for name, value in request["headers"].items():
        lines.append("%s: %s" % (name, value.replace("<port>", str(port))))
    body = (request.get("body") or "").encode()
    data = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(data)
        raw = b""
        while True:
            chunk = sock.recv(65536)  # ConnectionResetError here is a reset, not a clean close
            if not chunk:
                break
            raw += chunk
    if not raw:
        return Answer(closed_silently=True)
    return parse_answer(raw)


def parse_answer(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = headers.get("content-length")
    if length is not None:
        body = body[: int(length)]
    try:
        parsed = json.loads(body.decode()) if body else None
    except ValueError:
        parsed = None
    return Answer(status, headers, parsed, raw)


class Placeholders:
    """Binds each recorded placeholder (e.g. <boot_id:2>) to the value first
    seen in its place, and checks that distinct placeholders of one kind get
    distinct values: a new process must show a new boot_id."""

    def __init__(self):
        self.bound = {}

    def matches(self, recorded, actual):
        m = PLACEHOLDER.match(recorded)
        if not m:
            return recorded == actual
        if recorded not in self.bound:
            kind = m.group(1)
            for other, value in self.bound.items():
                if other.startswith("<" + kind + ":") and value == actual:
                    return False
            self.bound[recorded] = actual
        return self.bound[recorded] == actual


def same_value(recorded, actual, placeholders):
    """True when actual equals recorded, a placeholder standing for any value
    bound consistently; JSON types must agree (1 is not true)."""
    if isinstance(recorded, str):
        return isinstance(actual, str) and placeholders.matches(recorded, actual)
    if isinstance(recorded, dict):
        return (isinstance(actual, dict) and recorded.keys() == actual.keys()
                and all(same_value(recorded[k], actual[k], placeholders) for k in recorded))
    if isinstance(recorded, list):
        return (isinstance(actual, list) and len(recorded) == len(actual)
                and all(same_value(r, a, placeholders) for r, a in zip(recorded, actual)))
    return type(recorded) is type(actual) and recorded == actual


class Process:
    """A service process started for a transcript's "service_started" event
    and SIGKILLed for its "service_killed" one, as the published drivers'
    docker rm -f does."""

    def __init__(self, argv, env, ready):
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        self.port = ready(self.proc)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def wait_for_port(port, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("nothing listens on port %d after %.0f s" % (port, timeout_s))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Failures:
    """Collects what did not match, so one run reports every difference."""

    def __init__(self, benchmark):
        self.benchmark = benchmark
        self.lines = []

    def add(self, event, text):
        self.lines.append("#%s event %s (%s %s): %s" % (
            self.benchmark, event["n"], event["request"]["method"], event["request"]["target"], text))

    def report(self, what):
        if self.lines:
            print("\n".join(self.lines))
            print("FAILED: %d difference(s) in %s" % (len(self.lines), what))
            return 1
        print("ok: %s" % what)
        return 0
