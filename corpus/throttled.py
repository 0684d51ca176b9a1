"""ZhuoZhuoCrayon/throttled-py: ``Throttled`` on its ``RedisStore``, which builds its own
connection pool from the URL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from corpus.connection import url_of, whole_seconds
from ratelimit_harness.limiters import Policy


def fixed_window(client: Any, policy: Policy) -> Callable[[str], bool]:
    from throttled import RedisStore, Throttled, per_duration

    quota = per_duration(timedelta(seconds=whole_seconds(policy.window)), limit=policy.limit or 1)
    throttle = Throttled(using="fixed_window", quota=quota, store=RedisStore(server=url_of(client)))

    def check(identity: str) -> bool:
        return not throttle.limit(identity).limited

    return check


def gcra(client: Any, policy: Policy) -> Callable[[str], bool]:
    return _bucket("gcra", client, policy)


def token_bucket(client: Any, policy: Policy) -> Callable[[str], bool]:
    return _bucket("token_bucket", client, policy)


def _bucket(using: str, client: Any, policy: Policy) -> Callable[[str], bool]:
    """A bucket of ``capacity`` that refills one request every ``1 / rate`` seconds."""
    from throttled import RedisStore, Throttled, per_duration

    refill = timedelta(seconds=whole_seconds(1 / (policy.rate or 1)))
    quota = per_duration(refill, limit=1, burst=policy.capacity)
    throttle = Throttled(using=using, quota=quota, store=RedisStore(server=url_of(client)))

    def check(identity: str) -> bool:
        return not throttle.limit(identity).limited

    return check
