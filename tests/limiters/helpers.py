"""Building catalogue limiters on a manual clock, and counting what they admit."""

from __future__ import annotations

from typing import Any

from ratelimit_harness.limiters import CATALOGUE, Decision, Limiter, Policy
from ratelimit_harness.limiters.base import RedisLimiter
from tests.clocks import ManualClock


def make(name: str, client: Any, spec: str, clock: ManualClock) -> Limiter:
    """A catalogue limiter whose instance clock and server clock are both ``clock``."""
    return CATALOGUE[name].build(client, Policy.parse(spec), clock=clock, server_clock=clock)


def run(limiter: Limiter, requests: int, identity: str = "user:1") -> list[Decision]:
    return [limiter.check(identity) for _ in range(requests)]


def admitted(limiter: Limiter, requests: int, identity: str = "user:1") -> int:
    return sum(d.allowed for d in run(limiter, requests, identity))


def key_of(limiter: Limiter, identity: str = "user:1") -> str:
    """The one key a Redis limiter keeps for ``identity`` (its format: ``RedisLimiter.key``)."""
    assert isinstance(limiter, RedisLimiter)
    return limiter.key(identity)
