"""alisaifee/limits: its fixed and moving windows on its Redis storage, which builds its own
client from the URL. The same few lines fit every release from 1.2 to 5.8."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corpus.connection import url_of, whole_seconds
from ratelimit_harness.limiters import Policy


def fixed_window(client: Any, policy: Policy) -> Callable[[str], bool]:
    """``FixedWindowRateLimiter``: a counter whose key lives one window from its first hit."""
    from limits.strategies import FixedWindowRateLimiter

    return _hits(FixedWindowRateLimiter, client, policy)


def moving_window(client: Any, policy: Policy) -> Callable[[str], bool]:
    """``MovingWindowRateLimiter``: a log of admissions, stamped with the app server's clock."""
    from limits.strategies import MovingWindowRateLimiter

    return _hits(MovingWindowRateLimiter, client, policy)


def fixed_window_weighted(client: Any, policy: Policy) -> Callable[[str, int], bool]:
    """``FixedWindowRateLimiter.hit(item, identity, cost=n)`` (release 3 on)."""
    from limits.strategies import FixedWindowRateLimiter

    return _weighted_hits(FixedWindowRateLimiter, client, policy)


def moving_window_weighted(client: Any, policy: Policy) -> Callable[[str, int], bool]:
    """``MovingWindowRateLimiter.hit(item, identity, cost=n)`` (release 3 on)."""
    from limits.strategies import MovingWindowRateLimiter

    return _weighted_hits(MovingWindowRateLimiter, client, policy)


def _hits(strategy: Callable[[Any], Any], client: Any, policy: Policy) -> Callable[[str], bool]:
    hit = _hit(strategy, client, policy)
    return lambda identity: hit(identity, 1)


def _weighted_hits(
    strategy: Callable[[Any], Any], client: Any, policy: Policy
) -> Callable[[str, int], bool]:
    hit = _hit(strategy, client, policy, weighted=True)

    def check(identity: str, cost: int = 1) -> bool:
        return hit(identity, cost)

    return check


def _hit(
    strategy: Callable[[Any], Any], client: Any, policy: Policy, *, weighted: bool = False
) -> Callable[[str, int], bool]:
    """``hit(identity, cost)`` of the strategy on the Redis storage of ``client``'s server
    (the cost given only where ``weighted``: release 1 takes none)."""
    from limits import RateLimitItemPerSecond
    from limits.storage import RedisStorage

    item = RateLimitItemPerSecond(policy.limit or 1, whole_seconds(policy.window))
    storage = RedisStorage(url_of(client))
    limiter = strategy(storage)  # release 1 holds its storage by a weak reference only

    def hit(identity: str, cost: int) -> bool:
        assert storage is not None  # kept alive here, for as long as hit is
        if weighted:
            return bool(limiter.hit(item, identity, cost=cost))
        return bool(limiter.hit(item, identity))

    return hit
