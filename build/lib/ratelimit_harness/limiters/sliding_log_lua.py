"""sliding-log-lua: the sorted-set log of Part 3 made one atomic script (correct). Under a
policy that counts attempts (``count=attempts``) it logs every request, refused or not, as
Part 3's log does, and refuses once its window holds ``limit`` of them."""

import os

from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class SlidingLogLua(ScriptLimiter):
    policy_kinds = ("sliding-window",)
    script_file = "sliding_log.lua"

    def extra_args(self, identity: str) -> tuple[object, ...]:
        """The log's member for this request (96 random bits, unique in any one window), and
        what the log counts."""
        counted = "attempts" if self.policy.count == "attempts" else ""
        return (os.urandom(12).hex(), counted)


class SlidingLogAttemptsLua(SlidingLogLua):
    """sliding-log-attempts-lua: sliding-log-lua held to a policy that counts attempts."""

    counts = "attempts"
