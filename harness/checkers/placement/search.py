"""Can the admissions be placed, each inside its [invoke, complete], so the policy holds?

The answer decides over-admission for the sliding-window and bucket policies: a violation is
reported only when NO placement exists (sound), with a witness; a placement found proves the
history valid. The admissions are judged in segments, each apart. A segment is a run of them
with no gap as long as the rule's horizon (after such a gap, nothing before it counts): the
next one starts with an admission invoked at least that long after every earlier one
completed. In each segment, the search is:

1. earliest-deadline-first, each admission at the earliest instant the rule allows, forwards
   in time and then backwards (the rules read the same both ways);
2. where both fail, a Hall witness: admissions whose intervals lie inside a span that cannot
   hold so many, under any placement;
3. else, for a segment of at most ``EXACT_LIMIT`` admissions, an exhaustive search (EDF
   dominance prunes it), which either finds a placement or proves there is none;
4. else, for a segment of at most ``WIDE_LIMIT``, a Hall witness over every span between an
   invoke and a completion (the first scan ends at dropped admissions and looks back
   ``SCAN_HORIZONS`` horizons only, which keeps it linear; this one is quadratic).

A failure that none of these settles is reported as inconclusive, never as a violation.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ratelimit_harness.harness.checkers.placement.rules import Rule, RuleState, Tracker
from ratelimit_harness.harness.checkers.view.columns import Floats as Instants
from ratelimit_harness.harness.checkers.view.timeline import Timeline
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness

SLACK = 1e-6  # seconds: float noise on epoch times; erring this way can only excuse
# The exhaustive search tries orders of a segment's admissions (n!, pruned by EDF dominance) and
# remembers failed states (up to 2^n). SEARCH_BUDGET caps the states, but each costs up to n^2
# checks: 40 leaves longer segments (load runs) to the Hall scan below. Chosen, not measured.
EXACT_LIMIT = 40  # admissions in a segment the exhaustive search decides
WIDE_LIMIT = 2_000
SEARCH_BUDGET = 200_000
SCAN_HORIZONS = 8  # how far back from a dropped admission a Hall witness is looked for


@dataclass
class Findings:
    violations: list[Witness] = field(default_factory=list)
    inconclusive: list[Witness] = field(default_factory=list)


def check_placement(line: Timeline, rule: Rule, what: str) -> Findings:
    """Whether ``line``'s admissions can be placed so that ``rule`` holds (``what`` it is, in
    words, for the witnesses)."""
    findings = Findings()
    columns, admitted_at = line.columns, line.admitted_at
    if greedy_drops_none(columns.invoke[admitted_at], columns.end[admitted_at], rule):
        return findings  # step 1 forwards keeps every segment: the usual
    key, admitted = line.key, line.admitted
    for segment in _segments(admitted, rule.horizon):
        intervals = [(op.invoke, _complete(op)) for op in segment]
        drops = greedy(intervals, rule)
        if not drops or not greedy(_mirrored(intervals), rule):
            continue
        witnesses = hall_witnesses(key, segment, drops, rule, what)
        if witnesses:
            findings.violations += witnesses
            continue
        if len(segment) <= EXACT_LIMIT:
            outcome = _exhaustive(intervals, rule)
            if outcome is True:
                continue
            if outcome is False:
                detail = f"no placement of these {len(segment)} admissions keeps {what}"
                findings.violations.append(Witness(key, _span(segment), segment, detail))
                continue
        if len(segment) <= WIDE_LIMIT:  # a Hall witness ending anywhere, of any length
            ends = list(range(len(segment)))
            witnesses = hall_witnesses(key, segment, ends, rule, what, reach=math.inf)
            if witnesses:
                findings.violations += witnesses
                continue
        detail = f"could not decide whether these {len(segment)} admissions keep {what}"
        findings.inconclusive.append(Witness(key, _span(segment), segment, detail, excess=0))
    return findings


def _complete(op: Operation) -> float:
    assert op.complete is not None, "admissions always completed"
    return op.complete


def _span(ops: Sequence[Operation]) -> tuple[float, float]:
    return (min(op.invoke for op in ops), max(_complete(op) for op in ops))


def _segments(admitted: Sequence[Operation], horizon: float) -> list[list[Operation]]:
    """Split where no admission can be within ``horizon`` of one on the other side."""
    segments: list[list[Operation]] = []
    latest = float("-inf")
    for op in sorted(admitted, key=lambda op: op.invoke):
        if not segments or op.invoke - latest >= horizon + SLACK:
            segments.append([])
        segments[-1].append(op)
        latest = max(latest, _complete(op))
    return segments


def greedy_drops_none(starts: Instants, ends: Instants, rule: Rule) -> bool:
    """Whether ``greedy`` forwards drops nothing in any of ``_segments``: the same placements
    in one scan of plain floats with the rule's ``tracker`` (three times faster), the segments
    found for all admissions at once."""
    order = np.lexsort((ends, starts))
    starts, ends = starts[order], ends[order]
    latest = np.maximum.accumulate(ends)  # the latest completion up to each
    firsts = 1 + np.flatnonzero(starts[1:] - latest[:-1] >= rule.horizon + SLACK)
    bounds = [0, *firsts.tolist(), len(starts)]
    start_list, end_list = starts.tolist(), ends.tolist()
    return all(
        _drops_none(start_list, end_list, first, last, rule.tracker())
        for first, last in itertools.pairwise(bounds)
        if last > first
    )


def _drops_none(
    starts: list[float], deadlines: list[float], first: int, last: int, tracker: Tracker
) -> bool:
    """``greedy`` on the intervals ``first`` to ``last`` (sorted by start), up to its first
    drop. Ties of start may be released in any order: only the deadlines reach the heap, and
    equal ones place alike. One released alone (as most are) skips the heap."""
    place = tracker.place
    earliest = tracker.earliest()
    pending: list[float] = []
    position = first
    while position < last or pending:
        slot = earliest
        if not pending:
            slot = max(slot, starts[position])
            if position + 1 == last or starts[position + 1] > slot:  # released alone
                deadline = deadlines[position]
                position += 1
                if deadline < slot - SLACK:
                    return False
                earliest = place(min(slot, deadline))
                continue
        while position < last and starts[position] <= slot:
            heapq.heappush(pending, deadlines[position])
            position += 1
        deadline = heapq.heappop(pending)
        if deadline < slot - SLACK:
            return False
        earliest = place(min(slot, deadline))
    return True


def _mirrored(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(-end, -start) for start, end in intervals]


def greedy(intervals: list[tuple[float, float]], rule: Rule) -> list[int]:
    """Earliest deadline first, each at the earliest instant allowed; the indexes it drops."""
    order = sorted(range(len(intervals)), key=lambda i: intervals[i][0])
    state: RuleState = rule.start()
    pending: list[tuple[float, int]] = []
    dropped: list[int] = []
    position = 0
    while position < len(order) or pending:
        slot = state.earliest()
        if not pending:
            slot = max(slot, intervals[order[position]][0])
        while position < len(order) and intervals[order[position]][0] <= slot:
            index = order[position]
            heapq.heappush(pending, (intervals[index][1], index))
            position += 1
        deadline, index = heapq.heappop(pending)
        if deadline < slot - SLACK:
            dropped.append(index)
            continue
        state = state.place(min(slot, deadline))
    return dropped


def hall_witnesses(
    key: str,
    segment: list[Operation],
    drops: list[int],
    rule: Rule,
    what: str,
    *,
    reach: float = SCAN_HORIZONS,
) -> list[Witness]:
    """For each dropped admission: a span ending at its completion, at most ``reach`` horizons
    long, that holds, wholly inside it, more admissions than the rule allows any span of that
    length."""
    by_start = sorted(segment, key=lambda op: op.invoke)
    found: dict[tuple[float, float], Witness] = {}
    for index in drops:
        last = _complete(segment[index])
        inside: list[Operation] = []
        for op in reversed([op for op in by_start if op.invoke <= last]):
            span = last - op.invoke
            if span > reach * rule.horizon:
                break
            if _complete(op) <= last:
                inside.append(op)
            if len(inside) > rule.room(span + SLACK) and (op.invoke, last) not in found:
                excess = len(inside) - int(rule.room(span + SLACK))
                detail = (
                    f"{len(inside)} admissions fall within [{op.invoke:.6f}, {last:.6f}] "
                    f"({span:.6f} s) whatever their exact instants; {what} allows "
                    f"{rule.room(span + SLACK):g}"
                )
                found[(op.invoke, last)] = Witness(
                    key, (op.invoke, last), sorted(inside, key=lambda o: o.invoke), detail, excess
                )
                break
    return _disjoint(list(found.values()))


def _disjoint(witnesses: list[Witness]) -> list[Witness]:
    """Keep witnesses that share no admission, so their excesses add up honestly."""
    kept: list[Witness] = []
    used: set[int] = set()
    for witness in sorted(witnesses, key=lambda w: -w.excess):
        ids = {id(op) for op in witness.operations}
        if not ids & used:
            kept.append(witness)
            used |= ids
    return sorted(kept, key=lambda w: w.span)


def _exhaustive(intervals: list[tuple[float, float]], rule: Rule) -> bool | None:
    """True if some placement keeps the rule, False if none does, None if out of budget."""
    budget = [SEARCH_BUDGET]
    failed: set[tuple[frozenset[int], object]] = set()
    by_start = sorted(range(len(intervals)), key=lambda i: intervals[i][0])

    def search(remaining: frozenset[int], state: RuleState) -> bool:
        if not remaining:
            return True
        memo = (remaining, state.memo_key())
        if memo in failed:
            return False
        budget[0] -= 1
        if budget[0] < 0:
            raise _OutOfBudget
        for index in _candidates(remaining, state.earliest(), intervals, by_start):
            instant = max(state.earliest(), intervals[index][0])
            rest = remaining - {index}
            if instant > intervals[index][1] + SLACK:
                continue
            if any(intervals[other][1] < instant - SLACK for other in rest):
                continue  # someone else's deadline passes before this one could even go
            if search(rest, state.place(min(instant, intervals[index][1]))):
                return True
        failed.add(memo)
        return False

    try:
        return search(frozenset(range(len(intervals))), rule.start())
    except _OutOfBudget:
        return None


class _OutOfBudget(Exception):
    pass


def _candidates(
    remaining: frozenset[int],
    slot: float,
    intervals: list[tuple[float, float]],
    by_start: list[int],
) -> list[int]:
    """Who may go next: the released one with the earliest deadline (any other released one is
    dominated by it), and each not yet released one that would have to go before it (the
    Pareto front of later release, earlier deadline)."""
    released = [i for i in remaining if intervals[i][0] <= slot]
    chosen: list[int] = []
    bound = float("inf")
    if released:
        first = min(released, key=lambda i: intervals[i][1])
        chosen.append(first)
        bound = intervals[first][1]
    for index in by_start:
        if index in remaining and intervals[index][0] > slot and intervals[index][1] < bound:
            chosen.append(index)
            bound = intervals[index][1]
    return chosen
