"""Requests at chosen instants: a limiter built on a virtual clock that this module moves."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ratelimit_harness.limiters import Clock, Decision, Limiter


def at_instants(
    build: Callable[[Clock], Limiter], times: Iterable[float], identity: str = "source"
) -> list[Decision]:
    """The decisions of ``build(clock)`` for one request of ``identity`` at each of ``times``
    (seconds since the epoch, in order); the clock reads the instant of the request."""
    now = [0.0]
    limiter = build(lambda: now[0])
    decisions = []
    for t in times:
        now[0] = t
        decisions.append(limiter.check(identity))
    return decisions
