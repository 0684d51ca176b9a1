"""fixed-windows-lua: several aligned fixed windows at once ("10 a second and 1,000 an hour"),
every one checked and counted in one Lua script on server time (correct)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.lua import LuaScript
from ratelimit_harness.limiters.policy import Policy
from ratelimit_harness.limiters.script_limiter import server_time_script


class FixedWindows(RedisLimiter):
    """The base of the limiters of several aligned fixed windows: a key per window (``key(identity,
    n)``), ``windows`` each limit's (limit, window in microseconds), as the scripts take them."""

    policy_kinds = ("fixed-window + fixed-window",)  # and as many more as a policy joins
    script_name: ClassVar[str]

    def __init__(self, client: Any, policy: Policy, **options: Any) -> None:
        super().__init__(client, policy, **options)
        self.script: LuaScript = server_time_script(self.script_name)
        self.windows = [
            (int(limit.limit or 0), round(float(limit.window or 0) * 1e6))
            for limit in policy.limits
        ]

    @classmethod
    def enforces(cls, policy: Policy) -> bool:
        """Two or more aligned fixed windows."""
        promises = [limit.promise for limit in policy.limits]
        return len(promises) > 1 and set(promises) == {"fixed-window"}


class FixedWindowsLua(FixedWindows):
    script_name = "fixed_windows.lua"

    def check(self, identity: str) -> Decision:
        keys = tuple(self.key(identity, n) for n in range(len(self.windows)))
        args = [value for window in self.windows for value in window]
        *reply, binding = self.script.run_on(self.client, keys, *args, self.server_now_arg())
        limit = self.windows[binding - 1][0]
        return replace(Decision.from_script(reply, limit), binding=binding - 1)
