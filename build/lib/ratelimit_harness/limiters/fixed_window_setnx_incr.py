"""fixed-window-setnx-incr: Part 7's "robust" fix. SET key 0 NX EX window, then INCR.

Still two commands: when the key expires between them, SET NX has already done nothing and
INCR creates a fresh counter without a TTL (immortal key).
"""

import math

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision


class FixedWindowSetnxIncr(RedisLimiter):
    policy_kinds = ("fixed-window",)

    def check(self, identity: str) -> Decision:
        now = self.clock()
        index = math.floor(now / self.window)
        key = self.key(identity, index)
        self.client.set(key, 0, nx=True, ex=self.window_seconds)
        count = int(self.client.incr(key))
        reset_at = (index + 1) * self.window
        remaining = max(0, self.limit - count)
        retry_after = 0.0 if count <= self.limit else reset_at - now
        return Decision(count <= self.limit, remaining, self.limit, reset_at, retry_after, now)
