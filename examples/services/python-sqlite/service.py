#!/usr/bin/env python3
"""A payment service as a team writes it, to put under skewbench's series.

POST /payments with an Idempotency-Key header and {"order_id", "amount"}
charges the order once at a payment provider (POST {provider}/charges) and
answers 201 with the payment. The same key again, while its record lives,
answers 200 with the stored payment (a replay), 409 while the first request
is still in flight, 422 for another body. Records live in SQLite, with
expires_at = now + TTL, and the app judges expiry by its own clock:
time.time() of the instance that reads the record.

Python 3 standard library only. GET /healthz answers 200 once it listens.
"""

import argparse
import hashlib
import json
import sqlite3
import sys
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True, help="the SQLite file of the idempotency records")
    parser.add_argument("--provider", required=True, help="the payment provider's base URL")
    parser.add_argument("--ttl", type=int, default=60, help="seconds an idempotency record lives")
    return parser.parse_args()


ARGS = parse_args()


def connect():
    db = sqlite3.connect(ARGS.db, timeout=10, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    return db


def setup():
    db = connect()
    db.execute(
        "CREATE TABLE IF NOT EXISTS idempotency ("
        " key TEXT PRIMARY KEY, request_sha256 TEXT NOT NULL, state TEXT NOT NULL,"
        " response TEXT, created_at REAL NOT NULL, expires_at REAL NOT NULL)"
    )
    db.close()


def claim(key, request_sha256):
    """The record of `key` as it stands, or None when this request now owns it."""
    db = connect()
    try:
        db.execute("BEGIN IMMEDIATE")
        now = time.time()
        row = db.execute(
            "SELECT request_sha256, state, response, expires_at FROM idempotency WHERE key = ?", (key,)
        ).fetchone()
        if row is not None and row[3] > now:
            db.execute("COMMIT")
            return row
        # No record, or an expired one: this request starts afresh.
        db.execute("DELETE FROM idempotency WHERE key = ?", (key,))
        db.execute(
            "INSERT INTO idempotency (key, request_sha256, state, created_at, expires_at)"
            " VALUES (?, ?, 'in_progress', ?, ?)",
            (key, request_sha256, now, now + ARGS.ttl),
        )
        db.execute("COMMIT")
        return None
    finally:
        db.close()


def finish(key, response):
    db = connect()
    try:
        if response is None:
            db.execute("DELETE FROM idempotency WHERE key = ?", (key,))
        else:
            db.execute(
                "UPDATE idempotency SET state = 'completed', response = ? WHERE key = ?", (response, key)
            )
    finally:
        db.close()


def charge(order_id, amount):
    body = json.dumps({"reference": order_id, "amount": amount}).encode()
    request = urllib.request.Request(
        ARGS.provider.rstrip("/") + "/charges",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"{}")


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
        if self.path == "/healthz":
            self.answer(200, {"ok": True})
        else:
            self.answer(404, {"error": "not_found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path != "/payments":
            self.answer(404, {"error": "not_found"})
            return
        key = self.headers.get("Idempotency-Key")
        try:
            request = json.loads(raw)
            order_id, amount = str(request["order_id"]), int(request["amount"])
        except (ValueError, KeyError, TypeError):
            self.answer(400, {"error": "bad_request"})
            return
        if not key:
            self.answer(400, {"error": "idempotency_key_required"})
            return
        request_sha256 = hashlib.sha256(raw).hexdigest()
        record = claim(key, request_sha256)
        if record is not None:
            stored_sha256, state, response, _ = record
            if stored_sha256 != request_sha256:
                self.answer(422, {"error": "idempotency_key_reused_with_another_request"})
            elif state != "completed":
                self.answer(409, {"error": "request_in_progress"})
            else:
                self.answer(200, json.loads(response))
            return
        try:
            charged = charge(order_id, amount)
        except (urllib.error.URLError, OSError, ValueError) as error:
            finish(key, None)
            self.answer(502, {"error": "provider_failed", "detail": str(error)})
            return
        payment = {"order_id": order_id, "amount": amount, "status": "succeeded", "provider": charged}
        finish(key, json.dumps(payment))
        self.answer(201, payment)

    def log_message(self, format, *args):
        sys.stderr.write("%s %s\n" % (self.address_string(), format % args))


def main():
    setup()
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    sys.stderr.write("listening on 127.0.0.1:%d\n" % ARGS.port)
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
