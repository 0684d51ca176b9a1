"""Base of the limiters whose whole decision is one atomic Lua script on the server's clock.

Each script gets the ``server_time.lua`` prelude and takes its policy's two parameters, then
``now``: ``ARGV = (limit, window in microseconds)`` for the window kinds, ``(capacity, rate)`` for
the buckets, ``now`` third (empty: the server's TIME), then any ``extra_args``, then, for a
``weighted`` script, what the request costs. It returns the reply ``Decision.from_script``
reads.

A decision is one round trip, so everything else is worked out once, when the limiter is built:
the script's sha, the policy's arguments, the budget a Decision reports.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ratelimit_harness.limiters.base import RedisLimiter, lua_source
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.lua import LuaScript
from ratelimit_harness.limiters.policy import Policy


def server_time_script(filename: str) -> LuaScript:
    """The script of ``filename`` after the ``server_time.lua`` prelude (its ``now_us``)."""
    return LuaScript(lua_source("server_time.lua") + lua_source(filename))


class ScriptLimiter(RedisLimiter):
    weighted: ClassVar[bool] = False  # whether the script takes a request's cost, last

    def __init__(self, client: Any, policy: Policy, **options: Any) -> None:
        super().__init__(client, policy, **options)
        windowed = self.policy.limit is not None
        self.budget = self.limit if windowed else self.capacity
        self.policy_args = (self.limit, self.window_us) if windowed else (self.capacity, self.rate)

    def load_script(self, filename: str) -> LuaScript:
        return server_time_script(filename)

    def extra_args(self, identity: str) -> tuple[object, ...]:
        """What a script takes after ``now`` for ``identity``: none unless a limiter says so."""
        return ()

    def keys(self, identity: str) -> tuple[str, ...]:
        """The keys the script is given for ``identity``: its one key unless a limiter says so."""
        return (self.key(identity),)

    def check(self, identity: str, cost: int = 1) -> Decision:
        now = "" if self.server_clock is None else self.server_now_arg()
        args = (*self.policy_args, now, *self.extra_args(identity))
        if self.weighted:
            args = (*args, cost)
        elif cost != 1:
            raise ValueError(f"{type(self).__name__} takes no cost: every request costs 1")
        reply = self.script.run_on(self.client, self.keys(identity), *args)
        return Decision.from_script(reply, self.budget)
