"""vutran1710/PyrateLimiter's ``RedisBucket``, one bucket per identity: release 2 through its
``Limiter(RequestRate, bucket_class=RedisBucket)``, release 3 through ``RedisBucket.init`` (whose
``Limiter`` starts a leak thread of its own), release 4 through ``Limiter(bucket)``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from corpus.connection import whole_seconds
from ratelimit_harness.limiters import Policy


def redis_bucket_v2(client: Any, policy: Policy) -> Callable[[str], bool]:
    pyrate: Any = importlib.import_module("pyrate_limiter")  # release 2's names, untyped here
    rate = pyrate.RequestRate(policy.limit, whole_seconds(policy.window))
    kwargs = {"redis_pool": client.connection_pool, "bucket_name": "corpus"}
    limiter = pyrate.Limiter(rate, bucket_class=pyrate.RedisBucket, bucket_kwargs=kwargs)

    def check(identity: str) -> bool:
        try:
            limiter.try_acquire(identity)
        except pyrate.BucketFullException:
            return False
        return True

    return check


def redis_bucket_v3(client: Any, policy: Policy) -> Callable[[str], bool]:
    return _bucket_per_identity(
        client,
        policy,
        limiter=lambda pyrate, bucket: pyrate.Limiter(bucket, raise_when_fail=False),
        acquire=lambda limiter, identity: limiter.try_acquire(identity),
    )


def redis_bucket_v4(client: Any, policy: Policy) -> Callable[[str], bool]:
    """Release 4: ``Limiter(bucket)``, asked not to block (its default waits for room)."""
    return _bucket_per_identity(
        client,
        policy,
        limiter=lambda pyrate, bucket: pyrate.Limiter(bucket),
        acquire=lambda limiter, identity: limiter.try_acquire(identity, blocking=False),
    )


def _bucket_per_identity(
    client: Any,
    policy: Policy,
    *,
    limiter: Callable[[Any, Any], Any],
    acquire: Callable[[Any, str], Any],
) -> Callable[[str], bool]:
    """A ``RedisBucket.init`` bucket and its ``limiter(pyrate, bucket)`` per identity, made at
    its first check; ``acquire(limiter, identity)`` says whether it is admitted."""
    pyrate: Any = importlib.import_module("pyrate_limiter")  # release 3's or 4's names, untyped
    rate = pyrate.Rate(policy.limit, pyrate.Duration.SECOND * whole_seconds(policy.window))
    limiters: dict[str, Any] = {}

    def check(identity: str) -> bool:
        if identity not in limiters:
            bucket = pyrate.RedisBucket.init([rate], client, f"corpus:{identity}")
            limiters[identity] = limiter(pyrate, bucket)
        return bool(acquire(limiters[identity], identity))

    return check
