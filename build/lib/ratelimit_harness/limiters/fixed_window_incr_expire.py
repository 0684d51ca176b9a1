"""fixed-window-incr-expire: Part 2's counter. INCR, then EXPIRE when the count is 1.

The two commands are separate: an instance that dies (or loses its connection) between them
leaves a counter with no TTL, which never expires (immortal key).
"""

import math

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision


class FixedWindowIncrExpire(RedisLimiter):
    policy_kinds = ("fixed-window",)

    def check(self, identity: str) -> Decision:
        now = self.clock()
        index = math.floor(now / self.window)
        key = self.key(identity, index)
        count = int(self.client.incr(key))
        if count == 1:
            self.client.expire(key, self.ttl())
        reset_at = (index + 1) * self.window
        if count > self.limit:
            return Decision(False, 0, self.limit, reset_at, reset_at - now, now)
        return Decision(True, self.limit - count, self.limit, reset_at, 0.0, now)

    def ttl(self) -> int:
        """What EXPIRE is given: the window in whole seconds."""
        return self.window_seconds
