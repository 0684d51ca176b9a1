"""token-bucket-nonatomic: Part 5's bucket without the Lua. HMGET the state, refill and take
a token in the app, HSET it back: two instances that read the same count spend one token twice.
"""

import math

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision


class TokenBucketNonatomic(RedisLimiter):
    policy_kinds = ("token-bucket",)

    def check(self, identity: str) -> Decision:
        key = self.key(identity)
        now = self.clock()
        stored_tokens, stored_at = self.client.hmget(key, "tokens", "last_refill")
        tokens = float(stored_tokens) if stored_tokens is not None else float(self.capacity)
        last_refill = float(stored_at) if stored_at is not None else now
        tokens = min(self.capacity, tokens + (now - last_refill) * self.rate)
        allowed = tokens >= 1
        if allowed:
            tokens -= 1
        self.client.hset(key, mapping={"tokens": tokens, "last_refill": now})
        self.client.expire(key, math.ceil(self.capacity / self.rate) + 1)
        retry_after = 0.0 if allowed else (1 - tokens) / self.rate
        return Decision(allowed, math.floor(tokens), self.capacity, None, retry_after, now)
