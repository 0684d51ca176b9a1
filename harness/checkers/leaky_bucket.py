"""leaky-bucket (outbound): departures never exceed the rate, the queue never overfills.

In a leaky-bucket history an allowed operation's [invoke, complete] is its departure, the call
to the downstream service; its ``now`` is when the limiter accepted it into the queue. Departures
are held to at most 1 + rate * d in any span d (a bucket of one). The queue at t holds those
accepted by t that have not departed: certainly over capacity when more than ``capacity`` were
accepted by t and no placement of the calls (1/rate apart, none before it was invoked) lets
enough of them leave by t; kept when the calls placed earliest-deadline-first (forwards or
backwards) keep it; inconclusive otherwise. A rejection is wrongful when, at each instant it
may have happened at, fewer than ``capacity`` can have been waiting (an unknown operation
without a ``now`` counted as waiting from its invoke on, an allowed one without a ``now`` from
any time before its departure).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from itertools import accumulate

import numpy as np

from harness.checkers import token_bucket
from harness.checkers.counting import Counts, Instants
from harness.checkers.placement import SLACK, Findings
from harness.checkers.rejections import instants, wrongful
from harness.checkers.timeline import Timeline, bucket_params, decided_by, end
from harness.checkers.verdict import Witness
from harness.history import Operation, Outcome
from limiters.policy import Policy


def over_admissions(line: Timeline, policy: Policy) -> Findings:
    capacity, rate = bucket_params(policy)
    departures = Policy("token-bucket", capacity=1, rate=rate)
    findings = token_bucket.over_admissions(line, departures)
    queued = [op for op in line.admitted if op.now is not None]
    accepted = sorted(op.now for op in queued if op.now is not None)
    # waiting at t: accepted by t, not departed by t. No placement has more of the queued
    # calls departed by t than ``left(t)``: the k-th departure comes no sooner than the k-th
    # call is invoked, nor than 1/rate after the one before it, nor (as waiting goes) than the
    # k-th acceptance; and the calls that never said when they were queued take their turns
    # among all departures, those completed by t certainly taken
    spaced = _spaced(sorted(op.invoke for op in queued), rate)
    joined = sorted(max(op.now, op.invoke) for op in queued if op.now is not None)
    bound = [max(pair) for pair in zip(spaced, joined, strict=True)]
    every = _spaced(sorted(op.invoke for op in line.admitted), rate)
    others = sorted(end(op) for op in line.admitted if op.now is None)

    # at each acceptance t, at once: accepted by t, less left(t)
    at_each = np.array(accepted, dtype=np.float64)
    alongside = _counted(every, at_each) - _counted(others, at_each)
    left = np.minimum(_counted(bound, at_each), alongside)
    waits = _counted(accepted, at_each) - left
    most = int(waits.max()) if waits.size else 0
    at = float(at_each[waits == most].max()) if waits.size else 0.0  # the latest, as max() did
    settled = not queued or bool(findings.violations or findings.inconclusive)
    if most > capacity:
        waiting = [op for op in queued if op.now is not None and op.now <= at < end(op)]
        detail = (
            f"{most} accepted and not yet departed at {at:.6f}, their calls {1 / rate:g} s "
            f"apart; the queue holds {capacity}"
        )
        findings.violations.append(Witness(line.key, (at, at), waiting, detail, most - capacity))
    elif not settled and not _fits(line.admitted, capacity, rate):
        # the bound proves no excess, and no placement tried keeps the queue
        detail = f"could not decide whether {len(queued)} queued calls fit in {capacity}"
        span = (min(accepted), max(end(op) for op in queued))
        findings.inconclusive.append(Witness(line.key, span, queued, detail, excess=0))
    return findings


def _fits(admitted: list[Operation], capacity: int, rate: float) -> bool:
    """Whether the calls placed earliest-deadline-first, forwards or backwards in time, keep
    the queue within ``capacity``: a placement that does proves the history valid."""
    intervals = [(op.invoke, end(op)) for op in admitted]

    def forwards() -> list[float] | None:
        return _earliest(intervals, 1 / rate)

    def backwards() -> list[float] | None:  # tried only when forwards does not fit
        placed = _earliest([(-last, -first) for first, last in intervals], 1 / rate)
        return None if placed is None else [-t for t in placed]

    for placement in (forwards, backwards):
        departs = placement()
        if departs is None:
            continue
        queue = [(op.now, t) for op, t in zip(admitted, departs, strict=True) if op.now is not None]
        accepted = sorted(now for now, _ in queue)
        gone = sorted(max(now, t) for now, t in queue)
        at_each = np.array(accepted, dtype=np.float64)
        if np.all(_counted(accepted, at_each) - _counted(gone, at_each) <= capacity):
            return True
    return False


def _counted(ordered: list[float], instants: Instants) -> Counts:
    """How many of ``ordered`` are at or before each of ``instants`` (``bisect_right``)."""
    return np.searchsorted(np.array(ordered, dtype=np.float64), instants, "right")


def _earliest(intervals: list[tuple[float, float]], gap: float) -> list[float] | None:
    """Each at the earliest instant it may take, ``gap`` after the one before, the released one
    with the earliest deadline first; None if one misses its deadline."""
    order = sorted(range(len(intervals)), key=lambda i: intervals[i][0])
    placed = [0.0] * len(intervals)
    pending: list[tuple[float, int]] = []
    slot, position = -math.inf, 0
    while position < len(order) or pending:
        if not pending:
            slot = max(slot, intervals[order[position]][0])
        while position < len(order) and intervals[order[position]][0] <= slot:
            heapq.heappush(pending, (intervals[order[position]][1], order[position]))
            position += 1
        deadline, index = heapq.heappop(pending)
        if deadline < slot - SLACK:
            return None
        placed[index] = min(slot, deadline)
        slot = placed[index] + gap
    return placed


def _spaced(starts: list[float], rate: float) -> list[float]:
    """The earliest the k-th of calls invoked at ``starts`` (sorted) can depart, 1/rate apart."""
    return list(accumulate(starts, lambda last, start: max(last + 1 / rate - SLACK, start)))


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    capacity, _ = bucket_params(policy)
    # waiting at t: accepted by t, departing after t (one accepted after its departure never
    # waits); most at an acceptance. A limiter's ``now`` rounded to the microsecond may read a
    # hair after the history's clock: that noise excuses, never accuses
    accepted = sorted(_accepted(op) for op in line.maybe)
    gone = sorted(max(_accepted(op), end(op)) for op in line.maybe)

    def most_used(op: Operation) -> float:
        first, last = op.invoke, decided_by(op)
        later = accepted[bisect_right(accepted, first) : bisect_right(accepted, last + SLACK)]
        return max(
            bisect_right(accepted, t + SLACK) - bisect_right(gone, t)
            for t in [first, *(min(t, last) for t in later)]
        )

    first, _ = instants(line)  # most_used at each rejection's invoke, for all at once
    at_least = _counted(accepted, first + SLACK) - _counted(gone, first)
    unit = "places in the queue"
    return wrongful(line, most_used, capacity, unit, at_least=at_least.tolist())


def _accepted(op: Operation) -> float:
    """The earliest instant ``op`` may have joined the queue, as hurts a rejection most: its
    ``now``; an unknown operation that never said, as soon as it was invoked; an allowed one
    that never said, at any time before its departure."""
    if op.now is not None:
        return op.now
    return op.invoke if op.outcome is Outcome.UNKNOWN else -math.inf
