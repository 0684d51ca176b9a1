"""sliding-log-lua: the sorted-set log of Part 3 made one atomic script (correct)."""

import uuid

from limiters.script_limiter import ScriptLimiter


class SlidingLogLua(ScriptLimiter):
    policy_kinds = ("sliding-window",)
    script_file = "sliding_log.lua"

    def script_args(self) -> list[object]:
        return [self.limit, self.window_us, uuid.uuid4().hex, self.server_now_arg()]
