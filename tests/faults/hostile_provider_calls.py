#!/usr/bin/env python3
"""A payment service of its own wire that calls its provider (skewbench's
effect sink) as a hostile or careless service does, for the fault tests of
the sink (tests/faults/check_hostile_sink.sh, docs/faults.md).

  hostile_provider_calls.py --port P --provider URL --mode MODE [--delay-ms D]
                            [--pids FILE] [--sleep]

POST /payments with an Idempotency-Key and {"order_id", "amount"} charges
once (POST {provider}/charges, {"reference": order_id}) and answers 201; the
same key again answers 200 from memory (a replay). GET /healthz answers 200.
What MODE adds:
  plain   nothing: one charge, a replay answered from memory
  drain   a replay queues a second charge, made when SIGTERM asks it to stop
          (a graceful drain), before it exits
  late    a replay makes a second charge --delay-ms after it answered
  flood   the first charge is followed by 1,200 calls whose reference is
          20,000 bytes long (each refused or not, it carries on)
  noprefix the charge goes to /charges at the provider's host, its path
          ({sink_url}'s /instance/NAME) dropped, as urljoin(url, "/charges") does
  bytes   the charge goes to {provider}/charges/<order_id> followed by the
          bytes FF 1B "[2J": an id that is neither UTF-8 nor printable
With --sleep it sleeps 50 ms with time.sleep before it listens and before
each answer, as a service with a back-off does (time.sleep fails under
libfaketime 0.9.10: its target asks for "wall_clock": "skewbench"). With
--pids it appends its pid to FILE as it starts. Otherwise it waits on events
only.
"""
import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--provider", required=True)
parser.add_argument("--mode", required=True, choices=["plain", "drain", "late", "flood", "noprefix", "bytes"])
parser.add_argument("--delay-ms", type=int, default=0)
parser.add_argument("--pids")
parser.add_argument("--sleep", action="store_true")
ARGS = parser.parse_args()

RECORDS = {}
QUEUED = []
LOCK = threading.Lock()


def call_provider(reference, path="/charges"):
    body = json.dumps({"reference": reference, "amount": 1000}).encode()
    base = ARGS.provider.rstrip("/")
    if ARGS.mode == "noprefix":
        base = urllib.parse.urljoin(ARGS.provider, "/").rstrip("/")
    request = urllib.request.Request(base + path, data=body,
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def call_with_raw_path(raw_path):
    """POST to the provider with path bytes urllib would refuse to send."""
    url = urllib.parse.urlsplit(ARGS.provider)
    target = url.path.rstrip("/").encode() + raw_path
    body = b'{"amount": 1000}'
    with socket.create_connection((url.hostname, url.port), timeout=30) as s:
        s.sendall(b"POST " + target + b" HTTP/1.1\r\nHost: sink\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        while s.recv(4096):
            pass


def charge(order_id):
    if ARGS.mode == "bytes":
        call_with_raw_path(b"/charges/" + order_id.encode() + b"\xff\x1b[2J")
        return
    call_provider(order_id)
    if ARGS.mode == "flood":
        for _ in range(1200):
            call_provider("x" * 20000)


def on_term(signum, frame):
    with LOCK:
        queued = list(QUEUED)
    for order_id in queued:
        call_provider(order_id)
    sys.stderr.write("drained %d queued charge(s)\n" % len(queued))
    sys.stderr.flush()
    raise SystemExit(0)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, payload):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.answer(200 if self.path == "/healthz" else 404, {})

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        key, order_id = self.headers.get("Idempotency-Key"), str(request["order_id"])
        if ARGS.sleep:
            time.sleep(0.05)
        with LOCK:
            replay = key in RECORDS
            RECORDS[key] = order_id
        if not replay:
            charge(order_id)
            self.answer(201, {"order_id": order_id})
            return
        self.answer(200, {"order_id": order_id})
        if ARGS.mode == "drain":
            with LOCK:
                QUEUED.append(order_id)
        elif ARGS.mode == "late":
            def later():
                threading.Event().wait(ARGS.delay_ms / 1000.0)
                call_provider(order_id)
            threading.Thread(target=later).start()

    def log_message(self, format, *args):
        pass


if ARGS.pids:
    with open(ARGS.pids, "a") as pids:
        pids.write("%d\n" % os.getpid())
if ARGS.sleep:
    time.sleep(0.05)
signal.signal(signal.SIGTERM, on_term)
server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
server.daemon_threads = True
sys.stderr.write("listening on 127.0.0.1:%d\n" % ARGS.port)
sys.stderr.flush()
server.serve_forever()
