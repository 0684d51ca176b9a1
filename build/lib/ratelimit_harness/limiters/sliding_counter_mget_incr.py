"""sliding-counter-mget-incr: Part 4's weighted counter as written. MGET both windows,
decide in the app, then INCR and EXPIRE: instances that read the same counts all admit."""

import math

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision


class SlidingCounterMgetIncr(RedisLimiter):
    policy_kinds = ("sliding-counter",)

    def check(self, identity: str) -> Decision:
        now = self.clock()
        index = math.floor(now / self.window)
        current_key, previous_key = self.key(identity, index), self.key(identity, index - 1)
        current, previous = (int(v or 0) for v in self.client.mget(current_key, previous_key))
        elapsed = (now - index * self.window) / self.window
        estimate = current + previous * (1 - elapsed)
        if estimate >= self.limit:
            return Decision(allowed=False, remaining=0, limit=self.limit, now=now)
        pipeline = self.client.pipeline(transaction=False)
        pipeline.incr(current_key)
        pipeline.expire(current_key, 2 * self.window_seconds)
        pipeline.execute()
        remaining = math.floor(self.limit - estimate - 1)
        return Decision(allowed=True, remaining=remaining, limit=self.limit, now=now)
