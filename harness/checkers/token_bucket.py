"""token-bucket and gcra: in any span of length d, at most ``capacity + rate * d`` admissions
(the bucket starts full). The same promise, whichever way a limiter keeps its state."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import accumulate

from harness.checkers.counting import Placeable
from harness.checkers.placement import SLACK, Findings, check_placement
from harness.checkers.rejections import wrongful
from harness.checkers.rules import TokenBucket
from harness.checkers.timeline import Timeline, bucket_params
from harness.checkers.verdict import Witness
from harness.history import Operation
from limiters.policy import Policy


def over_admissions(line: Timeline, policy: Policy) -> Findings:
    capacity, rate = bucket_params(policy)
    what = f"a bucket of {capacity} refilled at {rate:g}/s"
    return check_placement(line.key, line.admitted, TokenBucket(capacity, rate), what)


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    """Wrongful: at every instant t the rejection may have happened at, the bucket held a
    token under every placement. The bucket at t is short of one iff some span [s, t] can hold
    more than capacity - 1 + rate * (t - s) admissions; with P(t) those invoked by t and Q(s)
    those completed before s, the most used is P(t) - rate * t + max over s <= t of
    (rate * s - Q(s))."""
    capacity, rate = bucket_params(policy)
    placeable = Placeable(line.maybe)
    ends = placeable.ends
    # rate * s - Q(s) peaks just at completions: Q only steps there
    best_since = list(
        accumulate((rate * e - bisect_left(ends, e) for e in ends), max, initial=float("-inf"))
    )[1:]

    def most_used(op: Operation) -> float:
        most = float("-inf")
        for t in [op.invoke, *placeable.invoked_between(op.invoke, op.complete or op.invoke)]:
            since = rate * t - bisect_left(ends, t)
            completed = bisect_right(ends, t)
            if completed:
                since = max(since, best_since[completed - 1])
            most = max(most, bisect_right(placeable.starts, t) - rate * t + since)
        return most

    # float noise excuses, never accuses
    return wrongful(line, most_used, capacity - 1 - SLACK * rate, "tokens")
