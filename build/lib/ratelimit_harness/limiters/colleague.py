"""colleague: the rate limiter of Practice Problem 3, as the colleague wrote it.

``GET rl:<id>`` then ``SETEX rl:<id> 60 count + 1`` (the key is ``rl:{<id>}:colleague:<policy>``
here, as ``RedisLimiter.key`` names keys): the read and the write race (over-admission); the
window is 60 s whatever the policy says, has no start, and every SETEX pushes its end further
away (wrongful rejection).
"""

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision

HARD_CODED_WINDOW = 60


class Colleague(RedisLimiter):
    policy_kinds = ("fixed-window",)
    prefix = "rl"

    def check(self, identity: str) -> Decision:
        key = self.key(identity)
        count = int(self.client.get(key) or b"0")
        if count >= self.limit:
            return Decision(allowed=False)
        self.client.execute_command("SETEX", key, HARD_CODED_WINDOW, count + 1)
        return Decision(allowed=True)
