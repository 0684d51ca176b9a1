"""A fixed window from the first admission, counted and expired in one Lua script (correct)."""

import os
import sys

import redis

SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return count <= tonumber(ARGV[1]) and 1 or 0
"""
limit = int(os.environ["RATELIMIT_POLICY"].split("limit=")[1].split(",")[0])
window_ms = int(float(os.environ["RATELIMIT_POLICY"].split("window=")[1].split(",")[0]) * 1000)
client = redis.Redis.from_url(os.environ["REDIS_URL"])
script = client.register_script(SCRIPT)
for line in sys.stdin:
    allowed = script(keys=[f"ratelimit:{{{line.strip()}}}:lua"], args=[limit, window_ms])
    print("allowed" if allowed else "rejected", flush=True)
