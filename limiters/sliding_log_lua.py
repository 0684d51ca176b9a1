"""sliding-log-lua: the sorted-set log of Part 3 made one atomic script (correct)."""

import os

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class SlidingLogLua(ScriptLimiter):
    policy_kinds = ("sliding-window",)
    script_file = "sliding_log.lua"

    def extra_args(self) -> tuple[object, ...]:
        """The log's member for this request: 96 random bits, unique in any one window."""
        return (os.urandom(12).hex(),)
