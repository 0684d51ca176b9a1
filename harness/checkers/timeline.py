"""The operations of one key, split the way every checker needs them."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from harness.history import Operation, Outcome
from limiters.policy import Policy, PolicyError


@dataclass
class Timeline:
    """One key's operations. ``admitted`` are the allowed ones (they completed, so each has a
    closed interval); ``maybe`` adds the unknown ones, whose interval may be open-ended."""

    key: str
    admitted: list[Operation] = field(default_factory=list)
    unknown: list[Operation] = field(default_factory=list)
    rejected: list[Operation] = field(default_factory=list)

    @property
    def maybe(self) -> list[Operation]:
        return self.admitted + self.unknown


def by_key(history: Iterable[Operation]) -> Iterator[Timeline]:
    timelines: dict[str, Timeline] = {}
    for op in history:
        line = timelines.get(op.key)
        if line is None:
            line = timelines[op.key] = Timeline(op.key)
        if op.outcome is Outcome.ALLOWED:
            line.admitted.append(op)
        elif op.outcome is Outcome.REJECTED:
            line.rejected.append(op)
        elif op.outcome is Outcome.UNKNOWN:
            line.unknown.append(op)
    return iter(timelines.values())


def end(op: Operation) -> float:
    """The latest instant the operation may have taken effect."""
    return math.inf if op.complete is None else op.complete


def decided_by(op: Operation) -> float:
    """When a decided (allowed or rejected) operation completed. A history never leaves one
    without a completion; an operation built without one is read as instantaneous. (Not
    ``op.complete or op.invoke``: a completion at 0.0 is a completion.)"""
    return op.invoke if op.complete is None else op.complete


def window_params(policy: Policy) -> tuple[int, float]:
    """(limit, window) of a window policy."""
    if policy.limit is None or policy.window is None:
        raise PolicyError(f"{policy} has no limit and window")
    return policy.limit, policy.window


def bucket_params(policy: Policy) -> tuple[int, float]:
    """(capacity, rate) of a bucket policy."""
    if policy.capacity is None or policy.rate is None:
        raise PolicyError(f"{policy} has no capacity and rate")
    return policy.capacity, policy.rate
