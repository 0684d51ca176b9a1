"""vutran1710/PyrateLimiter's ``RedisBucket``, one bucket per identity: release 2 through its
``Limiter(RequestRate, bucket_class=RedisBucket)``, release 3 through ``RedisBucket.init`` (whose
``Limiter`` starts a leak thread of its own), release 4 through ``Limiter(bucket)``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from corpus.connection import whole_seconds
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.base import check_args


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


def redis_bucket_v3(client: Any, policy: Policy) -> Callable[..., bool]:
    return _bucket_per_identity(
        client,
        policy,
        limiter=lambda pyrate, bucket: pyrate.Limiter(bucket, raise_when_fail=False),
        acquire=lambda limiter, identity: limiter.try_acquire(identity),
    )


def redis_bucket_v4(client: Any, policy: Policy) -> Callable[..., bool]:
    """Release 4: ``Limiter(bucket)``, asked not to block (its default waits for room)."""
    return _bucket_per_identity(
        client,
        policy,
        limiter=lambda pyrate, bucket: pyrate.Limiter(bucket),
        acquire=lambda limiter, identity: limiter.try_acquire(identity, blocking=False),
    )


def rates_and_weights_v3(client: Any, policy: Policy) -> Callable[[str, int], bool]:
    """Release 3 with every limit of a composite policy as one of the bucket's rates, and a
    request's cost as its weight: ``try_acquire(identity, weight=cost)``."""
    return _bucket_per_identity(
        client,
        policy,
        limiter=lambda pyrate, bucket: pyrate.Limiter(bucket, raise_when_fail=False),
        acquire=lambda limiter, identity, cost: limiter.try_acquire(identity, weight=cost),
    )


def rates_and_weights_v4(client: Any, policy: Policy) -> Callable[[str, int], bool]:
    """Release 4 as ``rates_and_weights_v3``, asked not to block."""
    return _bucket_per_identity(
        client,
        policy,
        limiter=lambda pyrate, bucket: pyrate.Limiter(bucket),
        acquire=lambda limiter, identity, cost: limiter.try_acquire(
            identity, weight=cost, blocking=False
        ),
    )


def _bucket_per_identity(
    client: Any,
    policy: Policy,
    *,
    limiter: Callable[[Any, Any], Any],
    acquire: Callable[..., Any],
) -> Callable[[str, int], bool]:
    """A ``RedisBucket.init`` bucket and its ``limiter(pyrate, bucket)`` per identity, made at
    its first check, with a rate per limit of the policy (a composite's several, shortest
    first); ``acquire(limiter, identity[, cost])`` says whether it is admitted, the cost given
    only where it is not 1."""
    pyrate: Any = importlib.import_module("pyrate_limiter")  # release 3's or 4's names, untyped
    rates = [
        pyrate.Rate(limit.limit, pyrate.Duration.SECOND * whole_seconds(limit.window))
        for limit in policy.limits or (policy,)
    ]
    limiters: dict[str, Any] = {}

    def check(identity: str, cost: int = 1) -> bool:
        if identity not in limiters:
            bucket = pyrate.RedisBucket.init(rates, client, f"corpus:{identity}")
            limiters[identity] = limiter(pyrate, bucket)
        return bool(acquire(limiters[identity], *check_args(identity, cost)))

    return check
