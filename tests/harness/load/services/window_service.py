"""A user's own HTTP service, for the tests of ``load --service`` and ``--target``: GET /api/*
limited per ``X-API-Key`` by a fixed window on ``$REDIS_URL`` (``$RATELIMIT_POLICY``), served on
``$PORT``; every other path is 404. It writes the contract's variables to stderr as it starts.

    python window_service.py expiring   INCR and PEXPIRE in one MULTI/EXEC: correct
    python window_service.py immortal   INCR alone: every counter it leaves lives forever
"""

from __future__ import annotations

import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

from ratelimit_harness.limiters import Policy

CONTRACT = ("PORT", "REDIS_URL", "RATELIMIT_POLICY", "RATELIMIT_INSTANCE")

mode = sys.argv[1]
policy = Policy.parse(os.environ["RATELIMIT_POLICY"])
limit, window = int(policy.params()["limit"]), float(policy.params()["window"])
client = redis.Redis.from_url(os.environ["REDIS_URL"])


def count(identity: str) -> int:
    key = f"svc:{identity}:{int(time.time() // window)}"
    if mode == "immortal":
        return int(client.incr(key))
    with client.pipeline(transaction=True) as block:
        block.incr(key)
        block.pexpire(key, int(window * 1000))
        return int(block.execute()[0])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if not self.path.startswith("/api/"):
            self._answer(404, {})
            return
        seen = count(self.headers.get("X-API-Key") or self.client_address[0])
        headers = {"X-RateLimit-Limit": str(limit)}
        headers["X-RateLimit-Remaining"] = str(max(0, limit - seen))
        self._answer(200 if seen <= limit else 429, headers)

    def _answer(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in (headers | {"Content-Length": "0"}).items():
            self.send_header(name, value)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


print(" ".join(f"{name}={os.environ.get(name)}" for name in CONTRACT), file=sys.stderr, flush=True)
ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
