"""evoluxbr/python-redis-rate-limit: ``RateLimiter(...).limit(client)`` per request, on the
given client's connection pool; over the limit it raises ``TooManyRequests``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corpus.connection import whole_seconds
from ratelimit_harness.limiters import Policy


def rate_limit(client: Any, policy: Policy) -> Callable[[str], bool]:
    from redis_rate_limit import RateLimiter, TooManyRequests

    limiter = RateLimiter(
        resource="corpus",
        max_requests=policy.limit,
        expire=whole_seconds(policy.window),
        redis_pool=client.connection_pool,
    )

    def check(identity: str) -> bool:
        try:
            limiter.limit(identity).increment_usage()
        except TooManyRequests:
            return False
        return True

    return check
