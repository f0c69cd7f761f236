#!/usr/bin/env python3
"""A payment service as a team writes it on PostgreSQL, to put under skewbench's series.

POST /payments with an Idempotency-Key header and {"order_id", "amount"}
charges the order once at a payment provider (POST {provider}/charges) and
answers 201 with the payment. The same key again, while its record lives,
answers 200 with the stored payment (a replay), 409 while the first request
is still in flight, 422 for another body.

The records live in PostgreSQL (DATABASE_URL), and expiry is judged the
common PostgreSQL way: by the database's now(), with the key's row locked
(SELECT ... FOR UPDATE) in the transaction that decides, so that two
instances never both take a key. expires_at = now() + TTL, by the database's
clock; the app reads no clock.

Python 3 with psycopg 3 (Debian: apt-get install python3-psycopg). GET
/healthz answers 200 once it listens and the database answers.
"""

import argparse
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    import psycopg
except ImportError:
    sys.exit("service.py: psycopg 3 is not installed (Debian: apt-get install python3-psycopg)")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--provider", required=True, help="the payment provider's base URL")
    parser.add_argument("--ttl", type=int, default=60, help="seconds an idempotency record lives")
    return parser.parse_args()


ARGS = parse_args()
DATABASE_URL = os.environ.get("DATABASE_URL") or sys.exit("service.py: DATABASE_URL is not set")


def connect():
    return psycopg.connect(DATABASE_URL, autocommit=True, connect_timeout=10)


def setup():
    with connect() as db, db.transaction():
        # Two instances start at once: one creates the table, the other waits.
        db.execute("SELECT pg_advisory_xact_lock(4242)")
        db.execute(
            "CREATE TABLE IF NOT EXISTS idempotency ("
            " key text PRIMARY KEY, request_sha256 text NOT NULL, state text NOT NULL,"
            " response text, created_at timestamptz NOT NULL, expires_at timestamptz NOT NULL)"
        )


def claim(key, request_sha256):
    """The record of `key` as it stands, or None when this request now owns it."""
    ttl = "%d seconds" % ARGS.ttl
    with connect() as db, db.transaction():
        taken = db.execute(
            "INSERT INTO idempotency (key, request_sha256, state, created_at, expires_at)"
            " VALUES (%s, %s, 'in_progress', now(), now() + %s::interval)"
            " ON CONFLICT (key) DO NOTHING RETURNING key",
            (key, request_sha256, ttl),
        ).fetchone()
        if taken is not None:
            return None
        row = db.execute(
            "SELECT request_sha256, state, response, expires_at > now() FROM idempotency"
            " WHERE key = %s FOR UPDATE",
            (key,),
        ).fetchone()
        if row[3]:
            return row
        # The record expired by the database's clock: this request starts afresh.
        db.execute(
            "UPDATE idempotency SET request_sha256 = %s, state = 'in_progress', response = NULL,"
            " created_at = now(), expires_at = now() + %s::interval WHERE key = %s",
            (request_sha256, ttl, key),
        )
        return None


def finish(key, response):
    with connect() as db:
        if response is None:
            db.execute("DELETE FROM idempotency WHERE key = %s", (key,))
        else:
            db.execute("UPDATE idempotency SET state = 'completed', response = %s WHERE key = %s", (response, key))


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
        if self.path != "/healthz":
            self.answer(404, {"error": "not_found"})
            return
        try:
            with connect() as db:
                db.execute("SELECT 1")
        except psycopg.Error as error:
            self.answer(503, {"error": "database_unavailable", "detail": str(error)})
            return
        self.answer(200, {"ok": True})

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
        try:
            record = claim(key, request_sha256)
        except psycopg.Error as error:
            self.answer(503, {"error": "database_unavailable", "detail": str(error)})
            return
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
