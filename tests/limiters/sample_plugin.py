"""A limiter written the way users write theirs: reads time.time() itself, returns a bool."""

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis


def factory(client: Any, policy: Any) -> Callable[[str], bool]:
    def check(identity: str) -> bool:
        window = int(time.time() // policy.window)
        key = f"user-limiter:{identity}:{window}"
        count = client.incr(key)
        client.expire(key, int(policy.window) + 1)
        return bool(count <= policy.limit)

    return check


def one_key_for_all(client: Any, policy: Any) -> Callable[[str], bool]:
    """A slip users make: the key forgets the identity, so every user shares one budget."""

    def check(identity: str) -> bool:
        key = f"user-limiter:{int(time.time() // policy.window)}"
        count = client.incr(key)
        if count == 1:
            client.expire(key, int(policy.window))
        return bool(count <= policy.limit)

    return check


def watch_retry(client: Any, policy: Any) -> Callable[[str], bool]:
    """Optimistic locking: WATCH the count, read it, MULTI/EXEC the increment, and start over
    when another client changed the count in between."""

    def check(identity: str) -> bool:
        key = f"user-limiter:{{{identity}}}:{int(time.time() // policy.window)}"
        while True:
            with client.pipeline() as pipe:
                try:
                    pipe.watch(key)
                    if int(pipe.get(key) or 0) >= policy.limit:
                        return False
                    pipe.multi()
                    pipe.incr(key)
                    pipe.expire(key, int(policy.window))
                    pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    return check


@dataclass
class Verdict:
    allowed: bool
    remaining: int


def rich_factory(client: Any, policy: Any) -> Callable[[str], Verdict]:
    counts: dict[str, int] = {}

    def check(identity: str) -> Verdict:
        counts[identity] = counts.get(identity, 0) + 1
        return Verdict(
            counts[identity] <= policy.capacity, max(0, policy.capacity - counts[identity])
        )

    return check


NOT_CALLABLE = 42


def returns_nothing_callable(client: Any, policy: Any) -> int:
    return 7


def raises_when_built(client: Any, policy: Any) -> Any:
    raise KeyError("RATE_SERVICE_URL")


GIVEN: list[Any] = []  # the clients async_factory was built with


async def async_factory(client: Any, policy: Any) -> Callable[[str], Any]:
    """An asyncio limiter: awaited when built (with a ``redis.asyncio`` client, which it keeps
    in ``GIVEN``); it admits the first ``limit`` requests of each identity, counted in memory,
    after a real pause."""
    GIVEN.append(client)
    counts: dict[str, int] = {}

    async def check(identity: str) -> Verdict:
        await asyncio.sleep(0.001)  # the limiter's loop keeps real time: this ends
        counts[identity] = counts.get(identity, 0) + 1
        return Verdict(counts[identity] <= policy.limit, policy.limit - counts[identity])

    return check
