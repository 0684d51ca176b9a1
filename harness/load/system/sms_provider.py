"""A stand-in SMS provider: a loopback HTTP server that records when each call arrived.

``python -m ratelimit_harness.harness.load.system.sms_provider --port P --record FILE`` serves
``POST /sms`` with a JSON body ``{"identity", "process", "accepted_at", "departs_at"}`` (epoch
seconds on this machine's clock: when the leaky bucket accepted the call, and when it scheduled it
to leave). Each arrival is appended to FILE at once, in one write, as one operation of a
leaky-bucket history: its interval is the departure, from the scheduled instant to the arrival, its
``now`` the acceptance. The limiter is judged by its schedule: an instance that sends late (its
event loop busy) and the network's jitter delay a call, and neither is the limiter's doing.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ratelimit_harness.harness.history import Operation, Outcome, format_operation
from ratelimit_harness.harness.load.system.outbound import QUEUE_KEY


class Arrivals:
    """The record file, appended one line per arrival (safe across threads and kills)."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self._lock = threading.Lock()

    def record(self, body: dict[str, object], arrived: float) -> None:
        departs = min(float(body["departs_at"]), arrived)  # type: ignore[arg-type]
        accepted = float(body["accepted_at"])  # type: ignore[arg-type]
        process = str(body["process"])
        line = format_operation(
            Operation(process, QUEUE_KEY, departs, arrived, Outcome.ALLOWED, accepted)
        ).encode()
        with self._lock:
            os.write(self._fd, line)


def serve(port: int, record: str) -> None:
    arrivals = Arrivals(record)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            arrived = time.time()
            length = int(self.headers.get("Content-Length") or 0)
            try:
                arrivals.record(json.loads(self.rfile.read(length)), arrived)
            except (ValueError, KeyError, TypeError):
                self._answer(400, b'{"error": "bad_request"}')
                return
            self._answer(200, b'{"ok": true}')

        def do_GET(self) -> None:  # readiness
            self._answer(200, b'{"ok": true}')

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return None

    with ThreadingHTTPServer(("127.0.0.1", port), Handler) as server:
        server.daemon_threads = True
        server.serve_forever()


if __name__ == "__main__":
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--port", type=int, required=True)
    options.add_argument("--record", required=True, help="the arrivals file (JSON Lines)")
    arguments = options.parse_args()
    serve(arguments.port, arguments.record)
