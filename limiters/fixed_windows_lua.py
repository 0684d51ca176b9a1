"""fixed-windows-lua: several aligned fixed windows at once ("10 a second and 1,000 an hour"),
every one checked and counted in one Lua script on server time (correct)."""

from __future__ import annotations

from typing import Any

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.policy import Policy
from ratelimit_harness.limiters.script_limiter import server_time_script

COMPOSITE_WINDOWS = "fixed-window + fixed-window"  # and as many more as a policy joins


def fixed_windows_only(policy: Policy) -> bool:
    """Whether ``policy`` joins two or more aligned fixed windows."""
    promises = [limit.promise for limit in policy.limits]
    return len(promises) > 1 and set(promises) == {"fixed-window"}


def windows(policy: Policy) -> list[tuple[int, int]]:
    """Each limit's (limit, window in microseconds), as the scripts take them."""
    return [
        (int(limit.limit or 0), round(float(limit.window or 0) * 1e6)) for limit in policy.limits
    ]


class FixedWindowsLua(RedisLimiter):
    policy_kinds = (COMPOSITE_WINDOWS,)

    def __init__(self, client: Any, policy: Policy, **options: Any) -> None:
        super().__init__(client, policy, **options)
        self.script = server_time_script("fixed_windows.lua")
        self.windows = windows(policy)
        self.budget = min(limit for limit, _ in self.windows)

    @classmethod
    def enforces(cls, policy: Policy) -> bool:
        return fixed_windows_only(policy)

    def check(self, identity: str) -> Decision:
        keys = tuple(self.key(identity, n) for n in range(len(self.windows)))
        now = self.server_now_arg()
        args = [value for window in self.windows for value in window]
        reply = self.script.run_on(self.client, keys, *args, now)
        return Decision.from_script(reply, self.budget)
