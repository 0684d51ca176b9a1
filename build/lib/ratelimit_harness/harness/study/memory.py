"""Memory per identity (``MEMORY USAGE`` of its keys, every element counted: ``SAMPLES 0``)
as the requests in one window rise, and the chapter's "1 million sorted-set entries is about
40 MB" (Part 3), measured on a sorted set shaped like the sliding log's."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from ratelimit_harness.harness.errors import HarnessError
from ratelimit_harness.harness.progress import Progress
from ratelimit_harness.harness.study.judged import Histories, History
from ratelimit_harness.harness.study.space import Space
from ratelimit_harness.harness.study.subjects import SUBJECTS, WINDOW

START = 1_800_000_000.0  # a virtual instant on a window edge (a multiple of 60 s)
ATTEMPTS = 3
MEMBER_BYTES = 16  # the sliding log's member is a uuid4 in hex: 32 characters
BATCH = 10_000


class KeysExpired(HarnessError):
    """An identity's keys were gone before they could be measured, attempt after attempt."""


def per_identity(
    space: Space, rates: Sequence[int], kept: Histories
) -> dict[str, list[dict[str, int]]]:
    """For each limiter, the bytes one identity holds after ``rate`` requests in one window,
    for each rate. The policy allows the highest rate (so every request is admitted and
    logged), the requests fall evenly in the first half of the window, on a virtual server
    clock. Its decisions go into ``kept`` (``memory/LIMITER``)."""
    rows: dict[str, list[dict[str, int]]] = {}
    with Progress("memory per identity", len(SUBJECTS) * sum(rates)) as bar:
        for subject in SUBJECTS:
            history = kept.of("memory", subject.limiter, subject.policy(max(rates)))
            rows[subject.limiter] = [_measured(space, history, r, bar) for r in rates]
    return rows


def _measured(space: Space, history: History, rate: int, bar: Progress) -> dict[str, int]:
    build = space.on_clock(history.limiter, history.policy)
    times = [START + i * WINDOW / 2 / rate for i in range(rate)]
    for attempt in range(ATTEMPTS):
        identity = f"memory-{rate}-{attempt}"
        decisions = history.at_instants(build, times, identity)
        admitted = sum(d.allowed for d in decisions)
        keys = space.keys_of(history.limiter, identity)
        sizes = [space.client.memory_usage(key, samples=0) for key in keys]
        bar.advance(rate if attempt == 0 else 0)
        found = [int(size) for size in sizes if size is not None]
        history.keys_left(space, [identity])
        if keys and len(found) == len(keys):  # a key that expired in between reads as None
            space.delete(keys)
            return {"requests": rate, "admitted": admitted, "keys": len(keys), "bytes": sum(found)}
    raise KeysExpired(f"{history.limiter}: the keys of {rate} requests expired before reading")


def sorted_set(space: Space, entries: int, per_set: int) -> dict[str, Any]:
    """``entries`` log entries (score: microseconds, member: 32 hex characters, as the sliding
    log writes them) as one sorted set, then as ``entries // per_set`` sets of ``per_set`` (the
    chapter's arithmetic: 100 requests a minute for each of 10,000 users). Bytes by MEMORY
    USAGE and by the growth of the server's ``used_memory``."""
    one = _filled(space, [space.key("zset-one")], entries, "one sorted set")
    many = [space.key("zset-many", str(i)) for i in range(entries // per_set)]
    return {
        "entries": entries,
        "one_set": one,
        "per_set": per_set,
        "sets": _filled(space, many, per_set, f"{len(many):,} sorted sets"),
    }


def _filled(space: Space, keys: list[str], members: int, label: str) -> dict[str, Any]:
    client = space.client
    before = int(client.info("memory")["used_memory"])
    stamp = round(time.time() * 1e6)
    total = len(keys) * members
    with Progress(f"sorted sets: {label}", total) as bar:
        pipe = client.pipeline(transaction=False)
        queued = 0
        for key in keys:
            for first in range(0, members, BATCH):
                count = min(BATCH, members - first)
                pipe.zadd(key, dict(zip(_members(count), range(stamp, stamp + count), strict=True)))
                queued += count
                if queued >= BATCH:
                    pipe.execute()
                    bar.advance(queued)
                    queued = 0
        pipe.execute()
        bar.advance(queued)
    grown = int(client.info("memory")["used_memory"]) - before
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.memory_usage(key, samples=0)
    usage = sum(int(n) for n in pipe.execute())
    encoding = client.object("encoding", keys[0])
    space.delete(keys)
    return {
        "memory_usage_bytes": usage,
        "used_memory_growth_bytes": grown,
        "bytes_per_entry": usage / total,
        "encoding": encoding.decode() if isinstance(encoding, bytes) else str(encoding),
    }


def _members(count: int) -> list[str]:
    text = os.urandom(MEMBER_BYTES * count).hex()
    width = 2 * MEMBER_BYTES
    return [text[i : i + width] for i in range(0, len(text), width)]
