"""fixed-window-block-lua: a window started by the identity's first request, and a block once
it is over (``block=B``), in one Lua script on the server's clock (correct). Only the request
that finds the window full starts the block; those refused inside it do not move its end."""

from __future__ import annotations

from ratelimit_harness.limiters.policy import FIRST_ANCHORED
from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class FixedWindowBlockLua(ScriptLimiter):
    policy_kinds = (FIRST_ANCHORED,)
    script_file = "fixed_window_block.lua"
    blocks = True

    def extra_args(self, identity: str) -> tuple[object, ...]:
        return (round(float(self.policy.block or 0) * 1e6),)
