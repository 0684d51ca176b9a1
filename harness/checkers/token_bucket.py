"""token-bucket and gcra: in any span of length d, at most ``capacity + rate * d`` admissions
(the bucket starts full). The same promise, whichever way a limiter keeps its state."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from itertools import accumulate

import numpy as np

from harness.checkers.placement import SLACK, Findings, check_placement
from harness.checkers.rejections import wrongful
from harness.checkers.rules import TokenBucket
from harness.checkers.timeline import Timeline, bucket_params, decided_by, end
from harness.checkers.verdict import Witness
from harness.history import Operation
from limiters.policy import Policy


def over_admissions(line: Timeline, policy: Policy) -> Findings:
    capacity, rate = bucket_params(policy)
    what = f"a bucket of {capacity} refilled at {rate:g}/s"
    return check_placement(line.key, line.admitted, TokenBucket(capacity, rate), what)


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    """Wrongful: at every instant t the rejection may have happened at, the bucket held a whole
    token under every placement (the reference model admits at one). It is short of one iff
    some span [s, t] can hold more than capacity - 1 + rate * (t - s) admissions (those that
    may share the rejection's instant counted before it); with P(t) those invoked by t and Q(s)
    those completed before s, the most used is P(t) - rate * t + max over s <= t of
    (rate * s - Q(s)), and the rejection is wrongful when that is at most capacity - 1.

    Times within 1 µs are not told apart: every interval, the rejection's too, is widened by
    SLACK each way. A refill over a span is then known to within 2 * SLACK * rate, so float
    noise never accuses (a bucket refilled to exactly one token is excused), while admissions
    at the rejection's own instant count in full. Times are taken from the first rejection,
    so that rate * t keeps its microseconds at epoch seconds."""
    capacity, rate = bucket_params(policy)
    if not line.rejected:
        return []
    origin = min(op.invoke for op in line.rejected)
    starts = sorted(op.invoke - origin - SLACK for op in line.maybe)
    ends = sorted(end(op) - origin + SLACK for op in line.maybe)
    # rate * s - Q(s) peaks just at completions: Q only steps there
    best_since = list(
        accumulate((rate * e - bisect_left(ends, e) for e in ends), max, initial=float("-inf"))
    )[1:]

    def most_used(op: Operation) -> float:
        first, last = op.invoke - origin - SLACK, decided_by(op) - origin + SLACK
        most = float("-inf")
        for t in [first, *starts[bisect_right(starts, first) : bisect_right(starts, last)]]:
            since = rate * t - bisect_left(ends, t)
            completed = bisect_right(ends, t)
            if completed:
                since = max(since, best_since[completed - 1])
            most = max(most, bisect_right(starts, t) - rate * t + since)
        return most

    # most_used at its first instant, for every rejection at once
    start_array, end_array = np.array(starts), np.array(ends)
    t = np.array([op.invoke - origin - SLACK for op in line.rejected])
    since = rate * t - np.searchsorted(end_array, t, "left")
    completed = np.searchsorted(end_array, t, "right")
    since = np.maximum(since, np.array([-math.inf, *best_since])[completed])
    at_least = np.searchsorted(start_array, t, "right") - rate * t + since - SLACK * rate

    # the widening lifts a refilled span's count by 2 * SLACK * rate; half of it absorbs the
    # float noise of the sums, so one token left at the rejection's instant still accuses
    return wrongful(
        line,
        lambda op: most_used(op) - SLACK * rate,
        capacity,
        "tokens",
        whole=True,
        at_least=at_least.tolist(),
    )
