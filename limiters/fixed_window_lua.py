"""fixed-window-lua: GET, compare and INCR as one Lua script on server time (correct).

``refund`` gives a request back to the window that admitted it, in one script as well: the
window is the decision's own (its ``now``), so a give-back that comes after the window has
turned gives nothing to the next one."""

from __future__ import annotations

import math
from functools import cached_property

from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.lua import LuaScript
from ratelimit_harness.limiters.script_limiter import ScriptLimiter


class FixedWindowLua(ScriptLimiter):
    policy_kinds = ("fixed-window",)
    script_file = "fixed_window.lua"

    @cached_property
    def refund_script(self) -> LuaScript:
        return self.load_script("fixed_window_refund.lua")

    def refund(self, identity: str, decision: Decision, cost: int = 1) -> None:
        """Give back a request ``decision`` admitted (``cost`` units of the budget)."""
        self.refund_script.run(self.client, self.key(identity), admitted_in(decision, self), cost)


def admitted_in(decision: Decision, limiter: ScriptLimiter) -> int:
    """The index of the window a decision of ``limiter`` was made in (its ``now``), as the
    script numbers windows: microseconds since the epoch over the window's."""
    if decision.now is None:
        raise ValueError("a decision without its now cannot be given back to its window")
    return math.floor(round(decision.now * 1e6) / limiter.window_us)
