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

import functools
import heapq
import math
from bisect import bisect_right

import numpy as np

from ratelimit_harness.harness.checkers.placement.search import SLACK, Findings
from ratelimit_harness.harness.checkers.policies import token_bucket
from ratelimit_harness.harness.checkers.shared.counting import Counts, Instants
from ratelimit_harness.harness.checkers.shared.rejections import instants, wrongful
from ratelimit_harness.harness.checkers.view.columns import UNKNOWN
from ratelimit_harness.harness.checkers.view.timeline import (
    Timeline,
    bucket_params,
    decided_by,
    end,
)
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import Policy


def over_admissions(line: Timeline, policy: Policy) -> Findings:
    capacity, rate = bucket_params(policy)
    departures = Policy("token-bucket", capacity=1, rate=rate)
    findings = token_bucket.over_admissions(line, departures)
    columns, admitted = line.columns, line.admitted_at
    invoke, now, ends = columns.invoke[admitted], columns.now[admitted], columns.end[admitted]
    said = ~np.isnan(now)  # the queued ones: their ``now`` is when they were accepted
    accepted = np.sort(now[said])
    # waiting at t: accepted by t, not departed by t. No placement has more of the queued
    # calls departed by t than ``left(t)``: the k-th departure comes no sooner than the k-th
    # call is invoked, nor than 1/rate after the one before it, nor (as waiting goes) than the
    # k-th acceptance; and the calls that never said when they were queued take their turns
    # among all departures, those completed by t certainly taken
    spaced = _spaced(np.sort(invoke[said]), rate)
    joined = np.sort(np.maximum(now[said], invoke[said]))
    bound = np.maximum(spaced, joined)
    every = _spaced(np.sort(invoke), rate)
    others = np.sort(ends[~said])

    # at each acceptance t, at once: accepted by t, less left(t)
    at_each = accepted
    alongside = _counted(every, at_each) - _counted(others, at_each)
    left = np.minimum(_counted(bound, at_each), alongside)
    waits = _counted(accepted, at_each) - left
    most = int(waits.max()) if waits.size else 0
    at = float(at_each[waits == most].max()) if waits.size else 0.0  # the latest, as max() did
    settled = not accepted.size or bool(findings.violations or findings.inconclusive)
    if most > capacity:
        waiting = [op for op in line.admitted if op.now is not None and op.now <= at < end(op)]
        detail = (
            f"{most} accepted and not yet departed at {at:.6f}, their calls {1 / rate:g} s "
            f"apart; the queue holds {capacity}"
        )
        findings.violations.append(Witness(line.key, (at, at), waiting, detail, most - capacity))
    elif not settled and not _fits(invoke, ends, now, capacity, rate):
        # the bound proves no excess, and no placement tried keeps the queue
        queued = [op for op in line.admitted if op.now is not None]
        detail = f"could not decide whether {len(queued)} queued calls fit in {capacity}"
        span = (float(accepted[0]), float(ends[said].max()))
        findings.inconclusive.append(Witness(line.key, span, queued, detail, excess=0))
    return findings


def _fits(invoke: Instants, ends: Instants, now: Instants, capacity: int, rate: float) -> bool:
    """Whether the calls (invoked at ``invoke``, completed at ``ends``, accepted at ``now``,
    NaN where they never said) placed earliest-deadline-first, forwards or backwards in time,
    keep the queue within ``capacity``: a placement that does proves the history valid."""
    said = ~np.isnan(now)
    accepted = np.sort(now[said])

    def forwards() -> Instants | None:
        return _earliest(invoke, ends, 1 / rate)

    def backwards() -> Instants | None:  # tried only when forwards does not fit
        placed = _earliest(-ends, -invoke, 1 / rate)
        return None if placed is None else -placed

    for placement in (forwards, backwards):
        departs = placement()
        if departs is None:
            continue
        gone = np.sort(np.maximum(now[said], departs[said]))
        if np.all(_counted(accepted, accepted) - _counted(gone, accepted) <= capacity):
            return True
    return False


def _counted(ordered: Instants, instants: Instants) -> Counts:
    """How many of ``ordered`` are at or before each of ``instants`` (``bisect_right``)."""
    return np.searchsorted(ordered, instants, "right")


def _earliest(starts: Instants, deadlines: Instants, gap: float) -> Instants | None:
    """Each at the earliest instant it may take, ``gap`` after the one before, the released one
    with the earliest deadline first; None if one misses its deadline."""
    order = np.argsort(starts, kind="stable").tolist()
    start_list, deadline_list = starts.tolist(), deadlines.tolist()
    placed = [0.0] * len(order)
    pending: list[tuple[float, int]] = []
    slot, position, count = -math.inf, 0, len(order)
    while position < count or pending:
        if not pending:
            slot = max(slot, start_list[order[position]])
            if position + 1 == count or start_list[order[position + 1]] > slot:
                index = order[position]  # released alone: no need of the heap
                position += 1
                if deadline_list[index] < slot - SLACK:
                    return None
                placed[index] = min(slot, deadline_list[index])
                slot = placed[index] + gap
                continue
        while position < count and start_list[order[position]] <= slot:
            heapq.heappush(pending, (deadline_list[order[position]], order[position]))
            position += 1
        deadline, index = heapq.heappop(pending)
        if deadline < slot - SLACK:
            return None
        placed[index] = min(slot, deadline)
        slot = placed[index] + gap
    return np.array(placed, dtype=np.float64)


def _spaced(starts: Instants, rate: float) -> Instants:
    """The earliest the k-th of calls invoked at ``starts`` (sorted) can depart, 1/rate apart."""
    gap = 1 / rate
    spaced = starts.tolist()
    for k in range(1, len(spaced)):
        after = spaced[k - 1] + gap - SLACK
        if not spaced[k] > after:  # max(after, start): ``after`` unless start is greater
            spaced[k] = after
    return np.array(spaced, dtype=np.float64)


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    capacity, _ = bucket_params(policy)
    # waiting at t: accepted by t, departing after t (one accepted after its departure never
    # waits); most at an acceptance. A limiter's ``now`` rounded to the microsecond may read a
    # hair after the history's clock: that noise excuses, never accuses
    columns, maybe = line.columns, line.maybe_at
    now, invoke = columns.now[maybe], columns.invoke[maybe]
    unknown = columns.outcome[maybe] == UNKNOWN
    if columns.refunded:  # one given back was admitted: queued any time before it left
        unknown &= np.isnan(columns.given_back[maybe])
    joined = np.where(np.isnan(now), np.where(unknown, invoke, -math.inf), now)  # _accepted
    accepted_array = np.sort(joined)
    gone_array = np.sort(np.maximum(joined, columns.end[maybe]))

    @functools.cache
    def lists() -> tuple[list[float], list[float]]:
        return accepted_array.tolist(), gone_array.tolist()

    def most_used(op: Operation) -> float:
        accepted, gone = lists()
        first, last = op.invoke, decided_by(op)
        later = accepted[bisect_right(accepted, first) : bisect_right(accepted, last + SLACK)]
        return max(
            bisect_right(accepted, t + SLACK) - bisect_right(gone, t)
            for t in [first, *(min(t, last) for t in later)]
        )

    first, _ = instants(line)  # most_used at each rejection's invoke, for all at once
    at_least = _counted(accepted_array, first + SLACK) - _counted(gone_array, first)
    unit = "places in the queue"
    return wrongful(line, most_used, capacity, unit, at_least=at_least)
