"""token-bucket-client-clock: Part 5's Lua as written, with ``now`` from each instance's clock.

Atomic, but the instances' clocks disagree: one that runs behind sets last_refill back in time,
and the next instance refills that stretch a second time (over-admission under clock skew).
"""

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision


class TokenBucketClientClock(RedisLimiter):
    policy_kinds = ("token-bucket",)
    script_file = "token_bucket_client_clock.lua"

    def check(self, identity: str) -> Decision:
        now = self.clock()
        allowed = self.script.run(self.client, self.key(identity), self.capacity, self.rate, now)
        return Decision(allowed=bool(allowed), limit=self.capacity, now=now)
