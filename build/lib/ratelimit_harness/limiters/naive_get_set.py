"""naive-get-set: Part 7's "WRONG" limiter. GET the count, compare, SET count + 1 with EX.

Two instances that GET the same count both admit (over-admission), and every SET restarts the
key's TTL, so the window never closes while admissions keep coming (wrongful rejection).
"""

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision


class NaiveGetSet(RedisLimiter):
    policy_kinds = ("fixed-window",)

    def check(self, identity: str) -> Decision:
        key = self.key(identity)
        count = int(self.client.get(key) or 0)  # step 1: read
        if count >= self.limit:  # step 2: check
            return Decision(allowed=False, remaining=0, limit=self.limit)
        self.client.set(key, count + 1, px=self.window_us // 1000)  # step 3: write
        return Decision(allowed=True, remaining=self.limit - count - 1, limit=self.limit)
