"""token-bucket and gcra: in any span of length d, at most ``capacity + rate * d`` admissions
(the bucket starts full). The same promise, whichever way a limiter keeps its state."""

from __future__ import annotations

import functools
import math
from bisect import bisect_left, bisect_right

import numpy as np

from ratelimit_harness.harness.checkers.placement.rules import TokenBucket
from ratelimit_harness.harness.checkers.placement.search import Findings, check_placement
from ratelimit_harness.harness.checkers.shared.rejections import wrongful
from ratelimit_harness.harness.checkers.view.timeline import Timeline, bucket_params, decided_by
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import Policy


def over_admissions(line: Timeline, policy: Policy) -> Findings:
    capacity, rate = bucket_params(policy)
    what = f"a bucket of {capacity} refilled at {rate:g}/s"
    return check_placement(line, TokenBucket(capacity, rate), what)


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    """Wrongful: at every instant t the rejection may have happened at, the bucket held a whole
    token under every placement (the reference model admits at one). It is short of one iff
    some span [s, t] can hold more than capacity - 1 + rate * (t - s) admissions (those that
    may share the rejection's instant counted before it); with P(t) those invoked by t and Q(s)
    those completed before s, the most used is P(t) - rate * t + max over s <= t of
    (rate * s - Q(s)), and the rejection is wrongful when that is at most capacity - 1.

    Exact, with no slack: a bucket refilled to exactly one token at the rejection's instant
    accuses it. Times are taken from the identity's first invoke, so that the differences of
    epoch seconds are exact and rate * t keeps every digit it can (and a stream, which knows
    that instant first, reckons alike: ``stream.bucket``)."""
    capacity, rate = bucket_params(policy)
    if not line.rejected_at.size:
        return []
    columns, maybe = line.columns, line.maybe_at
    origin = float(columns.invoke[line.at].min())
    start_array = np.sort(columns.invoke[maybe] - origin)
    end_array = np.sort(columns.end[maybe] - origin)
    # rate * s - Q(s) peaks just at completions: Q only steps there
    peaks = np.maximum.accumulate(rate * end_array - np.searchsorted(end_array, end_array, "left"))

    @functools.cache
    def lists() -> tuple[list[float], list[float], list[float]]:
        return start_array.tolist(), end_array.tolist(), peaks.tolist()

    def most_used(op: Operation) -> float:
        starts, ends, best_since = lists()
        first, last = op.invoke - origin, decided_by(op) - origin
        most = float("-inf")
        for t in [first, *starts[bisect_right(starts, first) : bisect_right(starts, last)]]:
            since = rate * t - bisect_left(ends, t)
            completed = bisect_right(ends, t)
            if completed:
                since = max(since, best_since[completed - 1])
            most = max(most, bisect_right(starts, t) - rate * t + since)
        return most

    # most_used at its first instant, for every rejection at once
    t = columns.invoke[line.rejected_at] - origin
    since = rate * t - np.searchsorted(end_array, t, "left")
    completed = np.searchsorted(end_array, t, "right")
    since = np.maximum(since, np.concatenate(([-math.inf], peaks))[completed])
    at_least = np.searchsorted(start_array, t, "right") - rate * t + since

    return wrongful(
        line,
        most_used,
        capacity,
        "tokens",
        whole=True,
        at_least=at_least,
    )
