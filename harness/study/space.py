"""The Redis a study runs on, and the keys it makes there.

A Redis the harness started is its own; a given one (``--redis-url``) must be empty, as for
``race`` (``harness.explorer.keyspace.claim``), and on either the study removes only the keys it
made: each carries the run's own prefix. Statistics are reset (``CONFIG RESETSTAT``) only on
a Redis the harness started.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

import redis

from ratelimit_harness.harness.explorer.server.keyspace import claim
from ratelimit_harness.harness.leftovers import key_ttls
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import CATALOGUE, Clock, Limiter, Policy


class Space:
    def __init__(self, server: RedisServer) -> None:
        self.owned = claim(server, flush=False)  # refuses a given Redis that holds keys
        self.url = server.url
        self.client = redis.Redis.from_url(server.url)
        # as long as the limiters' own "ratelimit", so that a key weighs what a user's would
        self.prefix = f"s{secrets.token_hex(4)}"

    def limiter(self, name: str, policy: Policy, client: Any = None, **clocks: Any) -> Limiter:
        """A catalogue limiter whose keys carry this run's prefix (and, as every limiter's, its
        own name and policy, so that no two limiters of a run ever share a key)."""
        factory = CATALOGUE[name].factory
        return factory(client or self.client, policy, prefix=self.prefix, **clocks)

    def on_clock(self, name: str, policy: Policy) -> Callable[[Clock], Limiter]:
        """What builds that limiter on a given virtual server clock (for ``at_instants``)."""
        return lambda clock: self.limiter(name, policy, server_clock=clock)

    def key(self, *parts: str) -> str:
        """A key of this run's own, outside any limiter's."""
        return ":".join([self.prefix, *parts])

    def keys_of(self, name: str, identity: str) -> list[str]:
        """The keys the limiter ``name`` of this run holds for ``identity``."""
        pattern = self._pattern(name, identity)
        return sorted(k.decode() for k in self.client.scan_iter(match=pattern, count=1000))

    def ttls_of(self, name: str, identities: Iterable[str]) -> dict[str, float]:
        """The keys the limiter ``name`` of this run holds for ``identities``, each with its
        TTL in seconds (-1: none)."""
        found: dict[str, float] = {}
        for identity in dict.fromkeys(identities):
            found |= key_ttls(self.client, self._pattern(name, identity))
        return found

    def _pattern(self, name: str, identity: str) -> str:
        return f"{_escaped(self.prefix)}:{{{_escaped(identity)}}}:{_escaped(name)}:*"

    def drop(self) -> int:
        """Delete every key this run made; how many there were."""
        return self.delete(k.decode() for k in self.client.scan_iter(f"{self.prefix}:*", 1000))

    def delete(self, keys: Iterable[str]) -> int:
        batch, deleted = [], 0
        for key in keys:
            batch.append(key)
            if len(batch) == 1000:
                deleted += int(self.client.delete(*batch))
                batch.clear()
        return deleted + (int(self.client.delete(*batch)) if batch else 0)

    def reset_stats(self) -> bool:
        """Zero the server's statistics when the harness started it; else leave them."""
        if self.owned:
            self.client.config_resetstat()
        return self.owned

    def close(self) -> None:
        self.drop()
        self.client.close()


def _escaped(identity: str) -> str:
    """``identity`` as a literal in a SCAN pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in identity)
