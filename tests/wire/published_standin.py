#!/usr/bin/env python3
"""A stand-in for the published #015-#019 external services, for the wire tests.

  published_standin.py --benchmark 015|016|017|018|019 [--host 127.0.0.1] [--port 0]

It answers the protocol as each published service answered in the recordings
(tests/data/wire/): the same endpoints, headers, checks, error strings and answer fields,
HTTP/1.0 with one request per connection, bodies as one JSON line with sorted
keys. replay_transcript.py proves it: every recorded answer of each published
driver's session is given again, body for body. It names itself (service
"skewbench-standin-0NN") rather than the published service, and is written
from the recorded wire alone. Environment, as the published containers read
it: STATE_DB (the SQLite file; #015 keeps its state in memory), IDEMPOTENCY_MODE
(#016: volatile or durable, any case; anything else exits 1),
DEFAULT_TTL_SECONDS (#017-#019, default 60), SERVICE_INSTANCE (#015).
It prints {"port": N} once it listens, and serves until killed.
"""

import argparse
import json
import os
import re
import socket
import sqlite3
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

INTEGER = re.compile(r"^-?[0-9]+$")

SCHEMA = """
CREATE TABLE IF NOT EXISTS effects (effect_id INTEGER PRIMARY KEY AUTOINCREMENT, operation_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL, created_at INTEGER, temporal_epoch INTEGER);
CREATE TABLE IF NOT EXISTS keys (idempotency_key TEXT PRIMARY KEY, operation_id TEXT NOT NULL,
  created_at INTEGER, expires_at INTEGER, temporal_epoch INTEGER);
CREATE TABLE IF NOT EXISTS counters (operation_id TEXT PRIMARY KEY, post_requests INTEGER NOT NULL,
  ack_drops INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS metadata (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO metadata(name, value) VALUES ('temporal_epoch', 1);
"""


class Refusal(Exception):
    def __init__(self, status, body):
        super().__init__(body)
        self.status = status
        self.body = body


def integer(text):
    text = text.strip() if text is not None else None
    return int(text) if text is not None and INTEGER.match(text) else None


class Service:
    """The state and rules of one published service."""

    def __init__(self, benchmark, env):
        self.benchmark = benchmark
        self.clocked = benchmark >= "017"  # #015 and #016 have no clock
        self.epochs = benchmark == "019"
        self.time_field = "evaluation_time" if benchmark == "018" else "logical_time"
        self.boot_id = uuid.uuid4().hex
        self.instance = env.get("SERVICE_INSTANCE", "external-http-container")
        self.mode = env.get("IDEMPOTENCY_MODE", "volatile").lower()
        if benchmark == "016" and self.mode not in ("volatile", "durable"):
            sys.exit("unsupported IDEMPOTENCY_MODE=%s" % env.get("IDEMPOTENCY_MODE"))
        self.default_ttl_s = int(env.get("DEFAULT_TTL_SECONDS", "60"))
        self.state_db = ":memory:" if benchmark == "015" else env.get("STATE_DB", "/state/remote.db")
        self.db = sqlite3.connect(self.state_db, check_same_thread=False, isolation_level=None)
        self.db.executescript(SCHEMA)
        self.volatile_keys = {}  # #016 volatile: key -> operation, for the life of the process
        self.lock = threading.Lock()

    # -- reading --------------------------------------------------------------

    def epoch(self):
        return self.db.execute("SELECT value FROM metadata WHERE name = 'temporal_epoch'").fetchone()[0]

    def snapshot(self, operation_id, now_s):
        effects = []
        order = "idempotency_key" if self.benchmark == "015" else "effect_id"
        for effect_id, key, created_at, epoch in self.db.execute(
                "SELECT effect_id, idempotency_key, created_at, temporal_epoch FROM effects"
                " WHERE operation_id = ? ORDER BY " + order, (operation_id,)):
            item = {"idempotency_key": key, "operation_id": operation_id}
            if self.benchmark >= "016":
                item["effect_id"] = effect_id
            if self.clocked:
                item["created_at"] = created_at
            if self.epochs:
                item["temporal_epoch"] = epoch
            effects.append(item)
        row = self.db.execute("SELECT post_requests, ack_drops FROM counters WHERE operation_id = ?",
                              (operation_id,)).fetchone() or (0, 0)
        count = len(effects)
        out = {"operation_id": operation_id, "status": "absent" if count == 0 else "committed" if count == 1
               else "conflict", "effect_count": count, "effects": effects, "post_requests": row[0],
               "ack_drops": row[1]}
        if self.benchmark == "016":
            out.update(boot_id=self.boot_id, idempotency_mode=self.mode,
                       durable_idempotency_records=self.db.execute(
                           "SELECT COUNT(*) FROM keys WHERE operation_id = ?", (operation_id,)).fetchone()[0])
        if self.clocked:
            records = []
            for key, created_at, expires_at, epoch in self.db.execute(
                    "SELECT idempotency_key, created_at, expires_at, temporal_epoch FROM keys"
                    " WHERE operation_id = ? ORDER BY idempotency_key", (operation_id,)):
                item = {"idempotency_key": key, "operation_id": operation_id, "created_at": created_at,
                        "expires_at": expires_at, "active_at_query": now_s < expires_at}
                if self.epochs:
                    item["temporal_epoch"] = epoch
                records.append(item)
            out.update(boot_id=self.boot_id, idempotency_records=records,
                       active_idempotency_records=sum(1 for r in records if r["active_at_query"]))
            out[self.time_field] = now_s
        if self.epochs:
            out["temporal_epoch"] = self.epoch()
        return out

    def health(self):
        out = {"status": "ok", "service": "skewbench-standin-" + self.benchmark, "hostname": socket.gethostname(),
               "pid": os.getpid()}
        if self.benchmark == "015":
            out["service_instance"] = self.instance
        if self.benchmark == "016":
            out.update(boot_id=self.boot_id, idempotency_mode=self.mode, state_db=self.state_db)
        if self.clocked:
            out.update(boot_id=self.boot_id, state_db=self.state_db, default_ttl_seconds=self.default_ttl_s)
        if self.epochs:
            out["temporal_epoch"] = self.epoch()
        return out

    # -- requests -------------------------------------------------------------

    def request_time(self, headers):
        now_s = integer(headers.get("X-Logical-Time"))
        if now_s is None:
            raise Refusal(400, {"error": "invalid_or_missing_logical_time"})
        return now_s

    def status(self, operation_id, headers):
        now_s = self.request_time(headers) if self.clocked else None
        if not operation_id:
            raise Refusal(400, {"error": "missing_operation_id"})
        with self.lock:
            return self.snapshot(operation_id, now_s)

    def gc(self, operation_id, headers):
        now_s = self.request_time(headers)
        if not operation_id:
            raise Refusal(400, {"error": "missing_operation_id"})
        with self.lock:
            before = self.epoch()
            removed = self.db.execute("DELETE FROM keys WHERE operation_id = ? AND expires_at <= ?",
                                      (operation_id, now_s)).rowcount
            after = before + 1 if removed > 0 else before
            self.db.execute("UPDATE metadata SET value = ? WHERE name = 'temporal_epoch'", (after,))
            return {"operation_id": operation_id, "logical_time": now_s, "removed_records": removed,
                    "temporal_epoch_before": before, "temporal_epoch_after": after}

    def post(self, headers):
        """(answer body or None for a dropped ack); raises Refusal."""
        operation_id = (headers.get("X-Operation-Id") or "").strip()
        key = (headers.get("Idempotency-Key") or "").strip()
        drop = (headers.get("X-Drop-Ack") or "").strip() == "1"
        if not self.clocked:
            if not operation_id or not key:
                raise Refusal(400, {"error": "missing_operation_or_idempotency_key"})
            with self.lock:
                return self.post_clockless(operation_id, key, drop)
        now_s = integer(headers.get("X-Logical-Time"))
        ttl_text = headers.get("X-Idempotency-TTL")
        ttl_s = self.default_ttl_s if ttl_text is None else integer(ttl_text)
        expected_text = headers.get("X-Expected-Temporal-Epoch")
        expected = integer(expected_text) if expected_text is not None else None
        if now_s is None or ttl_s is None or (self.epochs and expected_text is not None and expected is None):
            raise Refusal(400, {"error": "invalid_time_ttl_or_epoch" if self.epochs else "invalid_time_or_ttl"})
        if not operation_id or not key or ttl_s <= 0:
            raise Refusal(400, {"error": "missing_operation_key_or_invalid_ttl"})
        with self.lock:
            return self.post_clocked(operation_id, key, drop, now_s, ttl_s, headers, expected)

    def post_clockless(self, operation_id, key, drop):
        if self.benchmark == "016" and self.mode == "durable":
            row = self.db.execute("SELECT operation_id FROM keys WHERE idempotency_key = ?", (key,)).fetchone()
            holder = row[0] if row else None
        else:
            holder = self.volatile_keys.get(key)
        if holder is not None and holder != operation_id:
            if self.benchmark == "015":
                self.count(operation_id, drop=False)  # #015 counts the refused POST
            raise Refusal(409, {"error": "idempotency_key_reused_for_different_operation"})
        delivery = "deduplicated" if holder == operation_id else "applied"
        if delivery == "applied":
            self.db.execute("INSERT INTO effects(operation_id, idempotency_key) VALUES (?, ?)", (operation_id, key))
            if self.benchmark == "016" and self.mode == "durable":
                self.db.execute("INSERT OR REPLACE INTO keys(idempotency_key, operation_id) VALUES (?, ?)",
                                (key, operation_id))
            else:
                self.volatile_keys[key] = operation_id
        self.count(operation_id, drop)
        return None if drop else dict(self.snapshot(operation_id, None), delivery=delivery, idempotency_key=key)

    def post_clocked(self, operation_id, key, drop, now_s, ttl_s, headers, expected):
        if self.epochs and (headers.get("X-Require-Temporal-Fence") or "").strip() == "1" and expected != self.epoch():
            body = dict(self.snapshot(operation_id, now_s), error="temporal_epoch_mismatch", delivery="fenced_out",
                        expected_temporal_epoch=expected, current_temporal_epoch=self.epoch())
            raise Refusal(409, body)
        row = self.db.execute("SELECT operation_id, expires_at FROM keys WHERE idempotency_key = ?",
                              (key,)).fetchone()
        active = row is not None and now_s < row[1]
        if active and row[0] != operation_id:
            raise Refusal(409, {"error": "active_idempotency_key_reused_for_different_operation"})
        delivery = "deduplicated" if active else "applied"
        if delivery == "applied":
            epoch = self.epoch() if self.epochs else None
            self.db.execute("INSERT INTO effects(operation_id, idempotency_key, created_at, temporal_epoch)"
                            " VALUES (?, ?, ?, ?)", (operation_id, key, now_s, epoch))
            self.db.execute("INSERT OR REPLACE INTO keys(idempotency_key, operation_id, created_at, expires_at,"
                            " temporal_epoch) VALUES (?, ?, ?, ?, ?)", (key, operation_id, now_s, now_s + ttl_s, epoch))
        self.count(operation_id, drop)
        if drop:
            return None
        return dict(self.snapshot(operation_id, now_s), delivery=delivery, idempotency_key=key, ttl_seconds=ttl_s)

    def count(self, operation_id, drop):
        self.db.execute("INSERT INTO counters(operation_id, post_requests, ack_drops) VALUES (?, 1, ?)"
                        " ON CONFLICT(operation_id) DO UPDATE SET post_requests = post_requests + 1,"
                        " ack_drops = ack_drops + excluded.ack_drops", (operation_id, 1 if drop else 0))


def handler_for(service):
    class Handler(BaseHTTPRequestHandler):
        server_version = "SkewbenchStandin%s/1.0" % service.benchmark
        sys_version = ""

        def log_message(self, *args):
            pass

        def answer(self, status, body):
            data = (json.dumps(body, sort_keys=True) + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def serve(self, route):
            try:
                body = route()
            except Refusal as refusal:
                return self.answer(refusal.status, refusal.body)
            if body is None:
                self.close_connection = True  # the dropped ack: a clean close, the request read whole
                return None
            return self.answer(200, body)

        def do_GET(self):
            path = urlsplit(self.path).path
            if path == "/health":
                return self.answer(200, service.health())
            if path.startswith("/status/"):
                return self.serve(lambda: service.status(unquote(path[len("/status/"):]), self.headers))
            return self.answer(404, {"error": "not_found"})

        def do_POST(self):
            length = self.headers.get("Content-Length")
            if length is not None:
                self.rfile.read(int(length))  # read, never interpreted
            path = urlsplit(self.path).path
            if path == "/effects":
                return self.serve(lambda: service.post(self.headers))
            if service.epochs and path.startswith("/maintenance/gc/"):
                return self.serve(lambda: service.gc(unquote(path[len("/maintenance/gc/"):]), self.headers))
            return self.answer(404, {"error": "not_found"})

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", required=True, choices=["015", "016", "017", "018", "019"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    service = Service(args.benchmark, os.environ)
    server = ThreadingHTTPServer((args.host, args.port), handler_for(service))
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
