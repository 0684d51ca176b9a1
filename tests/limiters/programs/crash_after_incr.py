"""INCR then EXPIRE, as a line-protocol program: an instance killed between them leaves a key
with no TTL (the chapter's Part 2, in Python). Asked ``junk``, it answers junk."""

import os
import sys

import redis

limit = int(os.environ["RATELIMIT_POLICY"].split("limit=")[1].split(",")[0])
client = redis.Redis.from_url(os.environ["REDIS_URL"])
for line in sys.stdin:
    identity = line.strip()
    if identity == "junk":
        print("maybe", flush=True)
        continue
    key = f"ratelimit:{{{identity}}}:incr-expire"
    count = client.incr(key)
    if count == 1:
        client.expire(key, 10)
    print("allowed" if count <= limit else "rejected", flush=True)
