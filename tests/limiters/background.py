"""Plug-in limiters that start threads of their own, as released ones do (a leak thread, a
refresher): each counts in one INCR, and its thread does something on a timer."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ratelimit_harness.limiters import Policy

PERIOD = 5.0  # seconds between two rounds of a thread's work
# KEYS[1] the identity's counter; ARGV[1] the window, in seconds: the count, its TTL set at 1
ONE_WINDOW = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count"""


def _counting(client: Any, policy: Policy) -> Callable[[str], bool]:
    def check(identity: str) -> bool:
        return int(client.incr(f"ratelimit:{{{identity}}}:count")) <= (policy.limit or 1)

    return check


def sleeper(client: Any, policy: Policy) -> Callable[[str], bool]:
    """Its factory starts a thread that stamps the time it reads, then sleeps ``PERIOD``."""

    def stamp() -> None:
        while True:
            client.set("ratelimit:background:stamp", f"{time.time():.3f}")
            time.sleep(PERIOD)

    threading.Thread(target=stamp, name="stamper", daemon=True).start()
    return _counting(client, policy)


def async_leaker(client: Any, policy: Policy) -> Callable[[str], bool]:
    """Its first check starts a thread that runs an event loop of its own, as pyrate-limiter's
    Leaker does: each round trims the identity's counter, then ``asyncio.sleep(PERIOD)``."""
    started: list[threading.Thread] = []
    count = _counting(client, policy)

    async def leak(identity: str) -> None:
        while True:
            client.decr(f"ratelimit:{{{identity}}}:count")
            await asyncio.sleep(PERIOD)

    def check(identity: str) -> bool:
        if not started:
            thread = threading.Thread(target=asyncio.run, args=(leak(identity),), name="leaker")
            started.append(thread)
            thread.daemon = True
            thread.start()
        return count(identity)

    return check


def waits_on_a_queue(client: Any, policy: Policy) -> Callable[[str], bool]:
    """Its factory starts a thread that waits on a queue nobody fills: nothing can schedule it."""
    inbox: queue.Queue[str] = queue.Queue()

    def serve() -> None:
        client.set("ratelimit:background:served", inbox.get())

    threading.Thread(target=serve, name="server", daemon=True).start()
    return _counting(client, policy)


def pooled(client: Any, policy: Policy) -> Callable[[str], bool]:
    """Each check hands work to a thread pool and waits for it (as asyncio looks up a host name):
    the pool's threads are the check's helpers, not threads of their own."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    count = _counting(client, policy)
    return lambda identity: pool.submit(count, identity).result()


async def async_trimmer(client: Any, policy: Policy) -> Callable[[str], Any]:
    """An async factory that starts a task of its own, which outlives it: each round stamps the
    time it reads, then ``asyncio.sleep(PERIOD)``. Its checks are a first-request window in one
    script, correct."""

    async def trim() -> None:
        while True:
            await client.set("ratelimit:background:trimmed", f"{time.time():.3f}", ex=60)
            await asyncio.sleep(PERIOD)

    trimming = asyncio.get_running_loop().create_task(trim())

    async def check(identity: str) -> bool:
        assert not trimming.done()  # kept running while the limiter lives
        key, window = f"ratelimit:{{{identity}}}:count", int(policy.window or 1)
        return int(await client.eval(ONE_WINDOW, 1, key, window)) <= (policy.limit or 1)

    return check
