"""Three test limiters, each a flawed shape seen in released code, for the explorer to catch.

Each is a plug-in factory: ``factory(client, policy)`` returns ``check(identity)``, a bool.
Each runs a fixed window from the first hit (``fixed-window:...,anchor=first``), in whole
seconds. Their twins on the line protocol are in ``programs/shapes/``. ``test_shapes.py``
drives each breaking interleaving by hand on a real Redis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis


def exists_then_incrby(client: Any, policy: Any) -> Callable[[str], bool]:
    """A counter made with ``SET key 0 NX EX window``, then bumped by a cache's ``incr``.

    It mirrors django-ratelimit on Django's RedisCache: ``cache.add`` is SET NX EX, and
    ``cache.incr`` sends EXISTS, then INCRBY in a second round trip. When EXISTS says 0,
    the app sets the key to 1 with the window's TTL.

    Breaks: EXISTS answers 1. The window ends and the key expires. INCRBY then makes a
    new key with no TTL (TTL -1). That immortal key counts on forever, and the identity is
    refused for good once it passes the limit.
    """
    window = int(policy.window)

    def check(identity: str) -> bool:
        key = f"shapes:exists:{{{identity}}}"
        client.set(key, 0, nx=True, ex=window)
        if client.exists(key):
            count = int(client.incrby(key, 1))
        else:
            client.set(key, 1, ex=window)
            count = 1
        return bool(count <= policy.limit)

    return check


def marker_window(client: Any, policy: Any) -> Callable[[str], bool]:
    """A counter whose window is kept by a marker key that expires.

    A request GETs the marker. When it is missing, the request starts a window: DEL the
    counter and the marker, SET the counter to 0 (NX, with a TTL of two windows, so that it
    outlives the marker), SET the marker with the window's TTL. Then it INCRs the counter and
    admits when the count is within the limit.

    Breaks with no fault (limit 2): A GETs the marker: missing. B starts the window and is
    admitted twice. A then DELs B's window, starts its own, and is admitted: three
    admissions in one window. And with a stall: a request that read the marker stalls past
    the counter's TTL; its INCR then makes a counter with no TTL (an immortal key).
    """
    window = int(policy.window)

    def check(identity: str) -> bool:
        counter = f"shapes:marker:{{{identity}}}:counter"
        marker = f"shapes:marker:{{{identity}}}:marker"
        if client.get(marker) is None:
            client.delete(counter, marker)
            client.set(counter, 0, nx=True, ex=2 * window)
            client.set(marker, 1, ex=window)
        return bool(int(client.incr(counter)) <= policy.limit)

    return check


def compare_and_set(client: Any, policy: Any) -> Callable[[str], bool]:
    """Optimistic locking with one retry: WATCH, GET, then MULTI/EXEC the increment.

    It is redis-py's documented WATCH pattern, with the retry loop cut to one retry. Under
    the limit it queues INCR (and EXPIRE when the count was 0) and EXECs. When EXEC
    fails (another client wrote the key), it tries once more; a second failure refuses.

    Breaks (limit 10): A WATCHes and GETs. B admits a request. A's EXEC fails. A retries,
    WATCHes and GETs. B admits another. A's EXEC fails again, and A refuses with the count
    at 2 of 10: a wrongful rejection. It needs A preempted twice and B once.
    """
    window = int(policy.window)

    def attempt(key: str) -> bool | None:
        """True or False: decided. None: EXEC failed."""
        pipe = client.pipeline()
        try:
            pipe.watch(key)
            count = int(pipe.get(key) or 0)
            if count >= policy.limit:
                return False
            pipe.multi()
            pipe.incr(key)
            if count == 0:
                pipe.expire(key, window)
            pipe.execute()
            return True
        except redis.WatchError:
            return None
        finally:
            pipe.reset()

    def check(identity: str) -> bool:
        key = f"shapes:cas:{{{identity}}}"
        for _ in range(2):
            decided = attempt(key)
            if decided is not None:
                return decided
        return False

    return check
