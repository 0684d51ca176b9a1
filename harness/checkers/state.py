"""Checks of what a run left in Redis, and of which keys each identity touched.

- immortal keys: limiter keys with no TTL after the run (``ttl == -1`` in the snapshot), which
  never expire and pin an identity's count forever;
- collisions: a Redis key touched on behalf of two identities (from each operation's ``keys``,
  where the driver recorded them): one identity's requests count against another's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from operator import attrgetter

from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness


def immortal_keys(ttls: Mapping[str, float]) -> list[Witness]:
    return [
        Witness(key, (0.0, 0.0), [], f"{key} has no TTL: it never expires")
        for key, ttl in sorted(ttls.items())
        if ttl == -1
    ]


def collisions(history: Iterable[Operation]) -> list[Witness]:
    owners: dict[str, dict[str, list[Operation]]] = defaultdict(lambda: defaultdict(list))
    for op in filter(attrgetter("keys"), history):  # the few that recorded keys, in C
        for key in op.keys:
            owners[key][op.key].append(op)
    found = []
    for key, by_identity in sorted(owners.items()):
        if len(by_identity) > 1:
            identities = sorted(by_identity)
            examples = [ops[0] for ops in by_identity.values()]
            detail = f"{key} is used by {len(identities)} identities: {', '.join(identities)}"
            span = (min(op.invoke for op in examples), max(op.invoke for op in examples))
            found.append(Witness(key, span, examples, detail))
    return found
