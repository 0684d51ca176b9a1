"""sliding-log-lua: the sorted-set log of Part 3 made one atomic script (correct)."""

import uuid

from limiters.script_limiter import ScriptLimiter


class SlidingLogLua(ScriptLimiter):
    policy_kinds = ("sliding-window",)
    script_file = "sliding_log.lua"

    def script_args(self) -> list[object]:
        return [*super().script_args(), uuid.uuid4().hex]
