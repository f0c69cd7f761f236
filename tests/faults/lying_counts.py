#!/usr/bin/env python3
"""A service of skewbench's protocol that lies about its own state, for the
fault tests of the rule for counts (docs/evidence.md, "Counts a service
reports").

  lying_counts.py --lie LIE --port N -- COMMAND...

Starts COMMAND (a real remote-effect; the word INNER_PORT in it is replaced by
a free loopback port) and answers on --port for it, passing every request on
and every answer back, with one lie written into the answers' JSON:
  honest    none
  wrap      every effect_count is 2^64 - 1
  negative  every effect_count is -1
  flat      every effect_count is the first one it reported for the operation
  many      every effect_count is 1000
  boot      every answer carries a boot_id of its own; /health carries none
Under libfaketime time.sleep fails, so it waits on events only. It ends its
service on SIGTERM or SIGINT.
"""
import argparse
import http.client
import http.server
import json
import signal
import socket
import subprocess
import sys
import threading
import uuid

parser = argparse.ArgumentParser()
parser.add_argument("--lie", required=True, choices=["honest", "wrap", "negative", "flat", "many", "boot"])
parser.add_argument("--port", type=int, required=True)
parser.add_argument("command", nargs=argparse.REMAINDER)
args = parser.parse_args()
command = args.command[1:] if args.command[:1] == ["--"] else args.command

first_counts = {}  # operation id -> the first effect_count reported
lock = threading.Lock()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lie(path, body):
    if args.lie == "honest" or not isinstance(body, dict):
        return body
    if args.lie == "boot":
        if path == "/health":
            body.pop("boot_id", None)
        else:
            body["boot_id"] = uuid.uuid4().hex
        return body
    if "effect_count" not in body:
        return body
    if args.lie == "wrap":
        body["effect_count"] = 2**64 - 1
    elif args.lie == "negative":
        body["effect_count"] = -1
    elif args.lie == "many":
        body["effect_count"] = 1000
    elif args.lie == "flat":
        with lock:
            operation = body.get("operation_id", "")
            body["effect_count"] = first_counts.setdefault(operation, body["effect_count"])
    return body


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        upstream = http.client.HTTPConnection("127.0.0.1", inner_port, timeout=30)
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
        except (OSError, http.client.HTTPException):
            self.close_connection = True
            return  # the service closed without an answer: so does the liar
        finally:
            upstream.close()
        try:
            data = json.dumps(lie(self.path, json.loads(data))).encode()
        except ValueError:
            pass
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = forward
    do_POST = forward

    def log_message(self, *_):
        pass


inner_port = free_port()
service = subprocess.Popen([word.replace("INNER_PORT", str(inner_port)) for word in command])
stopped = threading.Event()


def stop(*_):
    stopped.set()


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)

# Ready when the service takes a connection.
for _ in range(400):
    if stopped.is_set() or service.poll() is not None:
        break
    try:
        socket.create_connection(("127.0.0.1", inner_port), timeout=1).close()
        break
    except OSError:
        stopped.wait(0.05)

server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
while not stopped.is_set() and service.poll() is None:
    stopped.wait(0.2)
server.shutdown()
if service.poll() is None:
    service.terminate()
    try:
        service.wait(timeout=5)
    except subprocess.TimeoutExpired:
        service.kill()
        service.wait()
sys.exit(0)
