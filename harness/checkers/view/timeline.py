"""The operations of one key, split the way every checker needs them."""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import cached_property

import numpy as np

from ratelimit_harness.harness.checkers.view.columns import (
    ALLOWED,
    REJECTED,
    UNKNOWN,
    Columns,
    Indexes,
)
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.limiters.policy import Policy, PolicyError


class Timeline:
    """One key's operations. ``admitted`` are the allowed ones (they completed, so each has a
    closed interval); ``maybe`` adds the unknown ones, whose interval may be open-ended. Each
    list is also given as the indexes of its operations in the history's ``columns``, for the
    checks that scan them all at once; the lists themselves are built only when asked for.

    Under a policy that counts attempts (``count=attempts``), ``maybe`` holds the rejected ones
    too: each may have been counted before a rejection (and counts itself: ``wrongful``)."""

    def __init__(
        self, key: str, columns: Columns, indexes: Indexes, *, attempts: bool = False
    ) -> None:
        self.key = key
        self.attempts = attempts
        self.columns = columns
        self.at = indexes  # all of them
        outcomes = columns.outcome[indexes]
        self.admitted_at = indexes[outcomes == ALLOWED]
        self.unknown_at = indexes[outcomes == UNKNOWN]
        self.rejected_at = indexes[outcomes == REJECTED]

    @cached_property
    def admitted(self) -> list[Operation]:
        return self.columns.picked(self.admitted_at)

    @cached_property
    def unknown(self) -> list[Operation]:
        return self.columns.picked(self.unknown_at)

    @cached_property
    def rejected(self) -> list[Operation]:
        return self.columns.picked(self.rejected_at)

    @property
    def maybe(self) -> list[Operation]:
        return self.admitted + self.unknown + (self.rejected if self.attempts else [])

    @property
    def maybe_at(self) -> Indexes:
        counted = (self.admitted_at, self.unknown_at)
        return np.concatenate((*counted, self.rejected_at) if self.attempts else counted)


def by_key(columns: Columns, *, attempts: bool = False) -> Iterator[Timeline]:
    """Each key's timeline, in the order keys first appear (``attempts``: see ``Timeline``)."""
    return (Timeline(key, columns, indexes, attempts=attempts) for key, indexes in columns.by_key())


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
