"""Checks of what a run left in Redis, and of which keys each identity touched.

- immortal keys: limiter keys with no TTL after the run (``ttl == -1`` in the snapshot), which
  never expire and pin an identity's count forever;
- excess TTLs: limiter keys set to live far longer than the policy could ever need
  (``EXCESS_FACTOR`` times ``Policy.longest_need``, a second at least): each is memory held for
  nothing, as a limiter that passes milliseconds where EXPIRE takes seconds holds it;
- collisions: a Redis key touched on behalf of two identities (from each operation's ``keys``,
  where the driver recorded them): one identity's requests count against another's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from operator import attrgetter

from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import Policy

EXCESS_FACTOR = 10  # a TTL this many times what the policy needs is excess


def immortal_keys(ttls: Mapping[str, float]) -> list[Witness]:
    return [
        Witness(key, (0.0, 0.0), [], f"{key} has no TTL: it never expires")
        for key, ttl in sorted(ttls.items())
        if ttl == -1
    ]


def excess_ttls(ttls: Mapping[str, float], policy: Policy) -> list[Witness]:
    """The keys whose TTL left exceeds ``EXCESS_FACTOR`` times the longest the policy needs a
    key (a whole second at least, as EXPIRE counts): a key set to live that long holds memory
    its identity can no longer use."""
    need = max(policy.longest_need(), 1.0)
    bound = EXCESS_FACTOR * need
    return [
        Witness(
            key,
            (0.0, 0.0),
            [],
            f"{key} still has {ttl:g} s to live; {policy} needs a key for {need:g} s at most "
            f"({EXCESS_FACTOR}x that is {bound:g} s)",
        )
        for key, ttl in sorted(ttls.items())
        if ttl > bound
    ]


def collisions(history: Iterable[Operation]) -> list[Witness]:
    """The Redis keys used on behalf of two identities or more (``collision_witnesses``)."""
    owners: dict[str, dict[str, Operation]] = defaultdict(dict)
    for op in filter(attrgetter("keys"), history):  # the few that recorded keys, in C
        for key in op.keys:
            owners[key].setdefault(op.key, op)
    return collision_witnesses(owners)


def collision_witnesses(owners: Mapping[str, Mapping[str, Operation]]) -> list[Witness]:
    """``owners``: for each Redis key, each identity's first operation on it, in the order the
    identities first used it."""
    found = []
    for key, by_identity in sorted(owners.items()):
        if len(by_identity) > 1:
            identities = sorted(by_identity)
            examples = list(by_identity.values())
            detail = f"{key} is used by {len(identities)} identities: {', '.join(identities)}"
            span = (min(op.invoke for op in examples), max(op.invoke for op in examples))
            found.append(Witness(key, span, examples, detail))
    return found
