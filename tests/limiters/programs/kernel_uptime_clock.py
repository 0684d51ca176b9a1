"""A fixed window from the first admission, counted and expired in one Lua script (correct),
that reports as ``now`` the real time of day read past every clock function: the boot instant
(``btime`` in ``/proc/stat``) plus the time since boot (``/proc/uptime``). Files, not clock
calls: no harness can move this clock, and its decisions give it away."""

import json
import os
import sys
from pathlib import Path

import redis

SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return count <= tonumber(ARGV[1]) and 1 or 0
"""


def real_now() -> float:
    booted = next(line for line in Path("/proc/stat").read_text().splitlines() if "btime" in line)
    return int(booted.split()[1]) + float(Path("/proc/uptime").read_text().split()[0])


limit = int(os.environ["RATELIMIT_POLICY"].split("limit=")[1].split(",")[0])
window_ms = int(float(os.environ["RATELIMIT_POLICY"].split("window=")[1].split(",")[0]) * 1000)
client = redis.Redis.from_url(os.environ["REDIS_URL"])
script = client.register_script(SCRIPT)
for line in sys.stdin:
    allowed = script(keys=[f"ratelimit:{{{line.strip()}}}:lua"], args=[limit, window_ms])
    print(json.dumps({"allowed": bool(allowed), "now": real_now()}), flush=True)
