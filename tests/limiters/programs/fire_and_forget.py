"""INCR, then EXPIRE when the count is 1, sent without waiting for it: written on a raw socket of
its own just before the answer is printed, its reply read by a thread that discards it (as
@fastify/rate-limit 8.0 sends its PEXPIRE and answers). Under the race explorer the EXPIRE is a
step of the request it follows: a crash while it is held leaves the key with no TTL."""

import os
import socket
import sys
import threading
import urllib.parse

import redis


def command(*words: str) -> bytes:
    """One command as RESP: an array of bulk strings."""
    parts = [f"${len(word.encode())}\r\n{word}\r\n" for word in words]
    return f"*{len(words)}\r\n{''.join(parts)}".encode()


def discard(sock: socket.socket) -> None:
    while sock.recv(65536):
        pass


url = urllib.parse.urlsplit(os.environ["REDIS_URL"])
limit = int(os.environ["RATELIMIT_POLICY"].split("limit=")[1].split(",")[0])
client = redis.Redis.from_url(os.environ["REDIS_URL"])
unawaited = socket.create_connection((url.hostname or "127.0.0.1", url.port or 6379))
database = url.path.strip("/") or "0"
if database != "0":
    unawaited.sendall(command("SELECT", database))
threading.Thread(target=discard, args=(unawaited,), daemon=True).start()
for line in sys.stdin:
    key = f"ratelimit:{{{line.strip()}}}:fire-and-forget"
    count = client.incr(key)
    if count == 1:
        unawaited.sendall(command("EXPIRE", key, "10"))  # in the kernel's buffer on return
    print("allowed" if count <= limit else "rejected", flush=True)
