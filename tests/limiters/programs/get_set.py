"""The chapter's naive GET-then-SET fixed window, as a line-protocol program on redis-py."""

import os
import sys

import redis

limit = int(os.environ["RATELIMIT_POLICY"].split("limit=")[1].split(",")[0])
window_ms = int(float(os.environ["RATELIMIT_POLICY"].split("window=")[1].split(",")[0]) * 1000)
client = redis.Redis.from_url(os.environ["REDIS_URL"])
for line in sys.stdin:
    key = f"ratelimit:{{{line.strip()}}}:get-set"
    count = int(client.get(key) or 0)
    if count >= limit:
        print("rejected", flush=True)
        continue
    client.set(key, count + 1, px=window_ms)
    print("allowed", flush=True)
