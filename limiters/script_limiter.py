"""Base of the limiters whose whole decision is one atomic Lua script on the server's clock.

Each script gets the ``server_time.lua`` prelude and takes its policy's two parameters, then
``now``: ``ARGV = (limit, window in microseconds)`` for the window kinds, ``(capacity, rate)`` for
the buckets, ``now`` third (empty: the server's TIME). It returns the reply ``Decision.from_script``
reads.
"""

from __future__ import annotations

from typing import Any

from limiters.base import RedisLimiter, lua_source
from limiters.decision import Decision


class ScriptLimiter(RedisLimiter):
    def load_script(self, client: Any, filename: str) -> Any:
        return client.register_script(lua_source("server_time.lua") + lua_source(filename))

    @property
    def budget(self) -> int:
        """What a Decision reports as its limit: requests per window, or the capacity."""
        return self.limit if self.policy.limit is not None else self.capacity

    def script_args(self) -> list[object]:
        if self.policy.limit is not None:
            return [self.limit, self.window_us, self.server_now_arg()]
        return [self.capacity, self.rate, self.server_now_arg()]

    def check(self, identity: str) -> Decision:
        reply = self.script(keys=[self.key(identity)], args=self.script_args())
        return Decision.from_script(reply, self.budget)
