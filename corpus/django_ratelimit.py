"""jsocol/django-ratelimit's ``get_usage`` on Django's own Redis cache backend
(``django.core.cache.backends.redis.RedisCache``): a fixed window whose edges each identity
shifts by a hash of its key (``phase=crc32``), counted with the cache's ``add``, then ``incr``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corpus.connection import configure_django, url_of, whole_seconds
from ratelimit_harness.limiters import Policy


def get_usage(client: Any, policy: Policy) -> Callable[[str], bool]:
    """``get_usage(request, group, key=identity, rate, increment=True)``, as its decorator calls
    it: admitted unless ``should_limit``."""
    configure_django(url_of(client))
    from django.http import HttpRequest
    from django_ratelimit.core import get_usage as usage_of

    rate = f"{policy.limit}/{whole_seconds(policy.window)}s"

    def check(identity: str) -> bool:
        request = HttpRequest()
        request.method = "GET"
        usage = usage_of(
            request, group="corpus", key=lambda group, request: identity, rate=rate, increment=True
        )
        return not usage["should_limit"]

    return check
