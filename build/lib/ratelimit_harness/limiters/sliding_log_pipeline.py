"""sliding-log-pipeline: Part 3's sorted-set log exactly as written.

A pipeline of ZREMRANGEBYSCORE, ZADD, ZCARD, EXPIRE; when the count is over the limit it
"undoes" the add with ZREM of a freshly drawn random member, which was never added. Rejected
requests stay in the log, so a client that keeps asking is locked out (wrongful rejection).
"""

import random

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision


class SlidingLogPipeline(RedisLimiter):
    policy_kinds = ("sliding-window",)

    def check(self, identity: str) -> Decision:
        now_ms = int(self.clock() * 1000)
        window_start = now_ms - self.window_us // 1000
        key = self.key(identity)
        pipeline = self.client.pipeline(transaction=False)
        pipeline.zremrangebyscore(key, 0, window_start)
        pipeline.zadd(key, {f"{now_ms}-{random.random()}": now_ms})
        pipeline.zcard(key)
        pipeline.expire(key, self.window_seconds)
        count = int(pipeline.execute()[2])
        if count > self.limit:
            self.client.zrem(key, f"{now_ms}-{random.random()}")  # not the member added above
            return Decision(allowed=False, remaining=0, limit=self.limit, now=now_ms / 1000)
        return Decision(True, self.limit - count, self.limit, now=now_ms / 1000)


class SlidingLogPipelineAttempts(SlidingLogPipeline):
    """sliding-log-pipeline-attempts: Part 3 as written, held to the promise its log keeps:
    every attempt counted (``count=attempts``). Its refusals are then no flaw; its pipeline's
    races still are."""

    counts = "attempts"
