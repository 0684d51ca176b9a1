"""Whose keys a run may remove. A Redis the harness started is its own: each schedule starts
on a flushed database. A Redis it was given (``--redis-url``) holds data that is not the
harness's to destroy: the explorer races there only on an empty database (or one the user told
it to erase, ``--flush``), and each run then deletes the keys it made and no others.

A key some other client writes while a run is under way cannot be told from the limiter's: it
is judged and deleted as the run's. So race on a database nothing else writes to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import redis

from ratelimit_harness.harness.errors import HarnessError
from ratelimit_harness.harness.explorer.server.keys import text
from ratelimit_harness.harness.provision import RedisServer


class NotEmpty(HarnessError):
    """A given Redis whose database holds keys the harness did not make."""


def claim(server: RedisServer, *, flush: bool) -> bool:
    """Whether runs on ``server`` may flush its database: one the harness started, or one it
    was given with ``--flush``. Any other database must be empty (else NotEmpty); its runs
    then remove only their own keys."""
    if server.how != "url" or flush:
        return True
    client = redis.Redis.from_url(server.url)
    try:
        held = client.dbsize()
    finally:
        client.close()
    if held:
        raise NotEmpty(
            f"the Redis at {server.url} holds {held} key{'s' * (held != 1)} the harness did "
            "not make; it races only on an empty database (--flush erases it first)"
        )
    return False


class Keyspace:
    """The keys of one run. With ``flush``, the database is emptied at the start; without it,
    the keys already there are someone else's: left alone, and out of the run's snapshot."""

    def __init__(self, admin: redis.Redis, *, flush: bool, real_time: bool = True) -> None:
        """``real_time``: the server keeps real time, so count what it expires by itself (on
        a server on virtual time every expiry is the run's own)."""
        self.admin, self.flush, self.real_time = admin, flush, real_time
        first = admin.pipeline(transaction=False)  # one round trip, as FLUSHDB alone was
        if flush:
            first.flushdb()
        else:
            first.scan(0, count=1000)
        if real_time:
            first.info("stats")
        head, *stats = first.execute()
        self.expired = int(stats[0]["expired_keys"]) if stats else 0
        self.foreign: frozenset[str] = frozenset() if flush else self._scanned(*head)

    def ours(self, ttls: dict[str, Any]) -> dict[str, Any]:
        """``ttls`` less the keys that were there before the run."""
        return {key: ttl for key, ttl in ttls.items() if key not in self.foreign}

    def close(self, keys: Iterable[str]) -> int:
        """End the run: on a database that is not flushed, delete the run's ``keys``. Returns
        how many keys the server expired itself since the run began. The explorer deletes the
        keys whose virtual deadline has passed and stretches every other TTL, so any such
        expiry came from real time, which must not reach a run (see ``RunResult.void``)."""
        last = self.admin.pipeline(transaction=False)
        if self.real_time:
            last.info("stats")
        keys = list(keys)
        if not self.flush and keys:
            last.delete(*keys)
        if not last.command_stack:
            return 0
        replies = last.execute()
        return int(replies[0]["expired_keys"]) - self.expired if self.real_time else 0

    def _scanned(self, cursor: int, keys: list[Any]) -> frozenset[str]:
        found = [text(key) for key in keys]
        while cursor:
            cursor, keys = self.admin.scan(cursor, count=1000)
            found += [text(key) for key in keys]
        return frozenset(found)
