#!/usr/bin/env python3
"""A small HTTP service on loopback that misbehaves on purpose, for the fault
tests of bounded exchanges (docs/faults.md, "Bounded exchanges").

  hostile_http.py --mode MODE [--port N] [--on PREFIX] [--depth N] [--bytes N]

Requests whose path starts with PREFIX (default "/": all) get the mode's
answer; any other request gets an honest one (a /health as remote-effect's,
else 404). Modes:
  honest   every answer honest
  trickle  the whole answer (head and body) one byte a second
  huge     200 OK with a valid JSON body of --bytes bytes (default 200 MB),
           chunked, so that no length is declared up front
  deep     200 OK with a /health whose "deep" field nests --depth arrays
           (default 2,000,000)
  silent   reads the request and never answers
  garbage  answers bytes that are not HTTP (GARBAGE below), then closes
Prints {"port": N} on stdout once it listens, then "request METHOD PATH" for
each request it reads. It exits on SIGTERM or SIGINT.
"""
import argparse
import json
import signal
import socket
import socketserver
import sys
import threading

HEALTH = {
    "status": "ok",
    "service": "hostile",
    "boot_id": "hostile-0001",
    "idempotency_mode": "durable",
    "temporal_epoch": 1,
    "clock": "logical",
    "wall_clock_s": None,
}

stop = threading.Event()

GARBAGE = b"\x00\x7fnot http <b>at all</b>\r\n\r\n"


def head(status, length=None, chunked=False):
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}", "Content-Type: application/json"]
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    else:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def honest(path):
    if path == "/health":
        body = json.dumps(HEALTH).encode()
        return head(200, len(body)) + body
    body = b'{"error":"not_found"}'
    return head(404, len(body)) + body


class Handler(socketserver.BaseRequestHandler):
    def read_request(self, buffer):
        while b"\r\n\r\n" not in buffer:
            chunk = self.request.recv(65536)
            if not chunk:
                return None, buffer
            buffer += chunk
        head_bytes, _, rest = buffer.partition(b"\r\n\r\n")
        lines = head_bytes.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = self.request.recv(65536)
            if not chunk:
                return None, b""
            rest += chunk
        return (method, path), rest[length:]

    def handle(self):
        cfg = self.server.cfg
        buffer = b""
        try:
            while not stop.is_set():
                request, buffer = self.read_request(buffer)
                if request is None:
                    return
                method, path = request
                print(f"request {method} {path}", flush=True)
                if cfg.mode == "honest" or not path.startswith(cfg.on):
                    self.request.sendall(honest(path))
                    continue
                getattr(self, "answer_" + cfg.mode)(path)
                return
        except OSError:
            return

    def answer_trickle(self, path):
        for byte in honest("/health"):
            if stop.wait(1.0):
                return
            self.request.sendall(bytes([byte]))

    def answer_huge(self, path):
        size = self.server.cfg.bytes
        self.request.sendall(head(200, chunked=True))
        piece = b"a" * (1024 * 1024)
        self.send_chunk(b'{"status":"ok","x":"')
        sent = 0
        while sent < size:
            part = piece[: min(len(piece), size - sent)]
            self.send_chunk(part)
            sent += len(part)
        self.send_chunk(b'"}')
        self.request.sendall(b"0\r\n\r\n")

    def send_chunk(self, data):
        self.request.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def answer_deep(self, path):
        depth = self.server.cfg.depth
        prefix = json.dumps(HEALTH)[:-1].encode() + b', "deep": '
        body = prefix + b"[" * depth + b"]" * depth + b"}"
        self.request.sendall(head(200, len(body)) + body)

    def answer_garbage(self, path):
        self.request.sendall(GARBAGE)

    def answer_silent(self, path):
        while self.request.recv(65536):
            pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True, choices=["honest", "trickle", "huge", "deep", "silent", "garbage"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--on", default="/")
    parser.add_argument("--depth", type=int, default=2_000_000)
    parser.add_argument("--bytes", type=int, default=200 * 1024 * 1024)
    cfg = parser.parse_args()
    server = Server(("127.0.0.1", cfg.port), Handler)
    server.cfg = cfg

    def on_signal(signum, frame):
        stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
