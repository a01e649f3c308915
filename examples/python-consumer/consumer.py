#!/usr/bin/env python3
"""A shipping consumer in Python, standard library only: the fixture's
handler as a real service to put under redeliver's target mode.

One shipment per order event, however often it is delivered: the processed
marker and the shipment are written in one sqlite3 transaction, so a crash
before the commit leaves neither, and a redelivery after it finds the marker.

    python3 consumer.py --port 8090 --db shipping.db

POST a structured CloudEvent (Content-Type: application/cloudevents+json)
whose data holds {"orderId": ...}. Answers: 200 processed or duplicate,
409 when the event id was processed for another order, 400 when the event
is malformed, 500 on a database error (not acknowledged: redeliver it).
GET /healthz answers 200.
"""

import argparse
import json
import signal
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCHEMA = """
CREATE TABLE IF NOT EXISTS processed_messages (
    event_id     TEXT PRIMARY KEY,
    order_id     TEXT NOT NULL,   -- the identity a redelivery must match
    processed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS shipments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id   TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
"""


class Rejected(Exception):
    """The event can never be processed: answered 400."""


def connect(path):
    # isolation_level=None: the transaction below is spelled out.
    conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 60000")
    return conn


def create_schema(path):
    conn = connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(SCHEMA)
    finally:
        conn.close()


def parse_event(body):
    try:
        event = json.loads(body)
    except ValueError as e:
        raise Rejected("body is not JSON: %s" % e)
    if not isinstance(event, dict) or event.get("specversion") != "1.0":
        raise Rejected("body is not a CloudEvent 1.0")
    event_id = event.get("id")
    data = event.get("data")
    if not isinstance(event_id, str) or not event_id:
        raise Rejected("the event has no id")
    if not isinstance(data, dict) or not isinstance(data.get("orderId"), str):
        raise Rejected("data.orderId is missing or not a string")
    return event_id, data["orderId"]


def handle(path, event_id, order_id):
    """Process one delivery; return (status, answer)."""
    conn = connect(path)
    try:
        # IMMEDIATE takes the write lock now: two deliveries of one event
        # queue here, and the second finds the first one's marker.
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT order_id FROM processed_messages WHERE event_id = ?", (event_id,)
            ).fetchone()
            if row is not None:
                conn.execute("ROLLBACK")
                if row[0] != order_id:
                    return 409, {"outcome": "conflict", "error": "event %s was processed for order %s" % (event_id, row[0])}
                shipment = conn.execute(
                    "SELECT min(id) FROM shipments WHERE event_id = ?", (event_id,)
                ).fetchone()[0]
                return 200, {"outcome": "duplicate", "shipment_id": shipment}
            conn.execute(
                "INSERT INTO processed_messages (event_id, order_id) VALUES (?, ?)", (event_id, order_id)
            )
            cur = conn.execute(
                "INSERT INTO shipments (order_id, event_id) VALUES (?, ?)", (order_id, event_id)
            )
            conn.execute("COMMIT")
            return 200, {"outcome": "processed", "shipment_id": cur.lastrowid}
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


class Handler(BaseHTTPRequestHandler):
    db_path = None
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/healthz":
            self.answer(200, {"ok": True})
        else:
            self.answer(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ctype != "application/cloudevents+json":
            self.answer(400, {"error": "want a structured CloudEvent (application/cloudevents+json), got %r" % ctype})
            return
        try:
            event_id, order_id = parse_event(body)
            status, answer = handle(self.db_path, event_id, order_id)
        except Rejected as e:
            status, answer = 400, {"error": str(e)}
        except sqlite3.Error as e:
            sys.stderr.write("consumer: %s\n" % e)
            status, answer = 500, {"error": str(e)}
        self.answer(status, answer)

    def answer(self, status, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        pass  # one line per delivery would drown a replay


def main(argv=None):
    p = argparse.ArgumentParser(description="Example shipping consumer (structured CloudEvents over HTTP).")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--db", required=True, help="SQLite file path")
    args = p.parse_args(argv)

    create_schema(args.db)
    Handler.db_path = args.db
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print("listening on %s:%d" % (args.host, server.server_address[1]), flush=True)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
