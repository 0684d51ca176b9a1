"""encode/django-rest-framework's ``SimpleRateThrottle`` on Django's own Redis cache backend
(``django.core.cache.backends.redis.RedisCache``): it GETs the identity's list of admission times
from the cache, drops those older than its duration, and SETs the list back when it admits.
A throttle is made per request, as DRF's views make theirs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corpus.connection import configure_django, url_of
from ratelimit_harness.limiters import Policy

# DRF's rates name their period by its first letter: seconds, minutes, hours or days
_PERIODS = {1.0: "s", 60.0: "m", 3600.0: "h", 86400.0: "d"}


def simple_rate_throttle(client: Any, policy: Policy) -> Callable[[str], bool]:
    period = _PERIODS.get(policy.window or 0.0)
    if period is None:
        raise ValueError(f"DRF's rates take windows of 1, 60, 3600 or 86400 s: {policy.window}")
    configure_django(url_of(client))
    from rest_framework.throttling import SimpleRateThrottle

    class Throttle(SimpleRateThrottle):  # type: ignore[misc]
        rate = f"{policy.limit}/{period}"

        def get_cache_key(self, request: Any, view: Any) -> str:
            return str(self.cache_format % {"scope": "corpus", "ident": request})

    def check(identity: str) -> bool:
        return bool(Throttle().allow_request(identity, None))

    return check
