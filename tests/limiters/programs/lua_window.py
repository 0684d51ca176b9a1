"""A fixed window from the first admission, counted and expired in one Lua script (correct)."""

import os
import sys
from collections.abc import Callable

import redis

SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return count <= tonumber(ARGV[1]) and 1 or 0
"""


def window_limiter() -> Callable[[str], bool]:
    """``allowed(identity)``: the script run on the policy in the environment."""
    policy = os.environ["RATELIMIT_POLICY"]
    limit = int(policy.split("limit=")[1].split(",")[0])
    window_ms = int(float(policy.split("window=")[1].split(",")[0]) * 1000)
    script = redis.Redis.from_url(os.environ["REDIS_URL"]).register_script(SCRIPT)
    return lambda identity: bool(
        script(keys=[f"ratelimit:{{{identity}}}:lua"], args=[limit, window_ms])
    )


if __name__ == "__main__":
    allowed = window_limiter()
    for line in sys.stdin:
        print("allowed" if allowed(line.strip()) else "rejected", flush=True)
