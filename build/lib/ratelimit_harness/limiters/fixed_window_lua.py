"""fixed-window-lua: GET, compare and INCR as one Lua script on server time (correct).

fixed-window-phase-lua is the same script with each identity's windows shifted by its phase
(``phase=crc32``): it is given the identity's origin (``Policy.origin``).

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

    def extra_args(self, identity: str) -> tuple[object, ...]:
        return (self.origin_us(identity),)

    def origin_us(self, identity: str) -> int:
        """Where ``identity``'s windows start past each multiple of the window, microseconds."""
        return round(self.policy.origin(identity) * 1e6)

    def refund(self, identity: str, decision: Decision, cost: int = 1) -> None:
        """Give back a request ``decision`` admitted (``cost`` units of the budget)."""
        window = admitted_in(decision, self, identity)
        self.refund_script.run(self.client, self.key(identity), window, cost)


class FixedWindowPhaseLua(FixedWindowLua):
    policy_kinds = ("fixed-window:phase=crc32",)


def admitted_in(decision: Decision, limiter: FixedWindowLua, identity: str) -> int:
    """The index of the window a decision of ``limiter`` for ``identity`` was made in (its
    ``now``), as the script numbers windows: microseconds past the identity's origin over the
    window's."""
    if decision.now is None:
        raise ValueError("a decision without its now cannot be given back to its window")
    shifted = round(decision.now * 1e6) - limiter.origin_us(identity)
    return math.floor(shifted / limiter.window_us)
