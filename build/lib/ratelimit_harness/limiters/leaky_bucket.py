"""leaky-bucket: Part 6's queue with a fixed drain, for outbound calls (correct).

``check`` either refuses (queue full) or accepts with ``Decision.delay``: the caller waits
that long, then makes its call. Departures never come closer than 1/rate seconds apart.
"""

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class LeakyBucket(ScriptLimiter):
    policy_kinds = ("leaky-bucket",)
    script_file = "leaky_bucket.lua"
