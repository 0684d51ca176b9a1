"""fixed-window with ``anchor=first``: windows [a, a + window), each started by the first
admission at or after the end of the one before (a correct limiter admits that one: limit >= 1),
as a key's TTL starts them. By the edge rule (``edges``), a window started at a holds what may
fall in [a, a + window + EDGE], and the next starts at a + window - EDGE or later.

Where the windows start depends on where each operation falls in its interval, and an ``unknown``
one may have reached Redis and started a window: for over-admission it is an admission that may
be counted or left out, whichever keeps the promise (a window it starts early can end early and
make room). The admitted and unknown operations are judged in segments, each apart. A segment
is a run of them with no gap of more than window + EDGE: the next one starts with an operation
invoked more than that after every earlier one ended. In each segment:

1. earliest-deadline-first with the unknown ones left out, each admission joining the open
   window while it has room and reach; where that fails, the same trying for each admission
   both joining and starting the next window, a bounded number of ways kept: a placement found
   proves the history valid (the usual case, near-linear);
2. Hall witnesses: admissions wholly inside a span that no choice of windows gives room for (a
   span of d meets at most floor((d + window + EDGE) / (window - EDGE)) + 1 windows), or inside a
   span from the segment's start, where the first window starts no earlier (floor(d / (window -
   EDGE)) + 1 windows);
3. else, for a segment of at most ``EXACT_LIMIT`` operations, an exhaustive search over where each
   window starts and which operations it holds: it finds windows that keep the promise, or proves
   that none do;
4. else inconclusive, never a violation.

Wrongful rejection: a rightful one has ``limit`` admissions (unknown ones counted) in its window
up to its instant, so within window + EDGE before it: the sliding window's check of the same
limit and window, which is sound. Where that excuses a rejection whose segment of the history
holds at most ``EXACT_LIMIT`` operations, a search over where the windows start settles it: the
rejection is wrongful when no way of starting them gives its window ``limit`` admissions by its
instant. (The search lets an admission that may have completed after the rejection's invoke
fall after the rejection, which is lenient.) In a longer segment, a rejection with ``limit``
admissions within a window before it, some of them in a window that had ended, is wrongful and
not reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from itertools import combinations

import numpy as np

from ratelimit_harness.harness.checkers.placement.rules import FirstWindows
from ratelimit_harness.harness.checkers.placement.search import (
    SLACK,
    Findings,
    greedy,
    greedy_drops_none,
    hall_witnesses,
)
from ratelimit_harness.harness.checkers.policies import sliding_window
from ratelimit_harness.harness.checkers.shared.edges import least_apart
from ratelimit_harness.harness.checkers.view.columns import Indexes
from ratelimit_harness.harness.checkers.view.timeline import (
    Timeline,
    decided_by,
    end,
    window_params,
)
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import Policy

# Each step of the exhaustive searches below may try every subset of a segment's operations
# (2^n), and SEARCH_BUDGET counts new states, not tries: 12 keeps a step within 2^12 = 4,096
# tries. Chosen, not measured (placement's search, one admission a step, allows 40).
EXACT_LIMIT = 12  # admitted and unknown operations in a segment the searches decide
SEARCH_BUDGET = 50_000  # windows tried per search (one per segment, or per rejection)
FRONTIER = 32  # ways of starting the windows kept at once when looking for a valid one

# an operation to place: (invoke, latest instant, whether it may be left out)
Placed = tuple[float, float, bool]


def over_admissions(line: Timeline, policy: Policy) -> Findings:
    limit, window = window_params(policy)
    rule = FirstWindows(limit, window)
    columns, admitted = line.columns, line.admitted_at
    if greedy_drops_none(columns.invoke[admitted], columns.end[admitted], rule):
        return Findings()
    what = f"at most {limit} in each window of {window:g} s started by an admission"
    findings = Findings()
    for segment in _segments(line, rule.horizon):
        found = _judge_segment(line.key, line.columns.picked(segment), rule, what)
        findings.violations += found.violations
        findings.inconclusive += found.inconclusive
    return findings


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    found = sliding_window.wrongful_rejections(line, policy)
    if not line.rejected_at.size or line.attempts:
        return found  # where attempts count, only the sliding window's bound is applied
    limit, window = window_params(policy)
    rule = FirstWindows(limit, window)
    accused = {id(witness.operations[0]) for witness in found}
    segments = _segments(line, rule.horizon)
    for index, near in _rejections_near_a_short_segment(line, segments, rule.horizon):
        rejection = line.columns.operations[index]
        if id(rejection) in accused:
            continue
        first, last = rejection.invoke, decided_by(rejection)
        placed = [
            (op.invoke, end(op), op.outcome is not Outcome.ALLOWED or end(op) >= first)
            for op in line.columns.picked(near)
            if op.invoke <= last
        ]
        need = limit - rejection.cost + 1  # the units its window must hold to refuse it
        if need > 0 and _window_can_be_full(placed, (first, last), rule, need) is False:
            detail = (
                f"rejected with fewer than {limit} admissions in its window, however it started"
            )
            found.append(Witness(line.key, (first, last), [rejection], detail))
    return found


def kept_at_instants(admitted: Sequence[Operation], policy: Policy) -> bool:
    """Whether admissions that each took effect at one instant (``invoke``), all of a request's
    units together, keep windows started by admissions: each window starts at the first
    admission a window or more after the last one started, and holds ``limit`` units at most.
    A yes proves the history valid; the checker's own search may split a request's units
    across the edge between two windows, which no limiter does."""
    limit, window = window_params(policy)
    started, held = -math.inf, 0
    for op in sorted(admitted, key=lambda op: op.invoke):
        if op.invoke >= started + window:
            started, held = op.invoke, 0
        held += op.cost
        if held > limit:
            return False
    return True


def _segments(line: Timeline, horizon: float) -> list[Indexes]:
    """The indexes of the admitted and unknown operations, by invoke, split where nothing can
    count within ``horizon`` of the other side: the segments judged apart."""
    maybe = line.maybe_at
    invokes, ends = line.columns.invoke[maybe], line.columns.end[maybe]
    order = np.lexsort((ends, invokes))
    latest = np.maximum.accumulate(ends[order])
    firsts = 1 + np.flatnonzero(invokes[order][1:] - latest[:-1] > horizon + SLACK)
    return np.split(maybe[order], firsts.tolist()) if maybe.size else []


def _rejections_near_a_short_segment(
    line: Timeline, segments: list[Indexes], horizon: float
) -> list[tuple[int, Indexes]]:
    """Each rejection (its index) whose instant only one segment of the history can count at,
    from within a window before it, when that segment holds at most ``EXACT_LIMIT`` operations:
    with that segment. The segment is the last to start by the rejection's completion; the one
    before it ends too early (its operations end earlier still)."""
    if not segments or not line.rejected_at.size:
        return []
    columns = line.columns
    starts = np.array([columns.invoke[s].min() for s in segments])
    ends = np.array([columns.end[s].max() for s in segments])
    sizes = np.array([s.size for s in segments])
    first = columns.invoke[line.rejected_at]
    latest = np.searchsorted(starts, columns.decided_by[line.rejected_at], "right") - 1
    reaches = ends[np.maximum(latest, 0)] >= first - horizon
    before = np.maximum(latest - 1, 0)
    alone = (latest == 0) | (ends[before] < first - horizon)
    chosen = np.flatnonzero(
        (latest >= 0) & reaches & alone & (sizes[np.maximum(latest, 0)] <= EXACT_LIMIT)
    )
    return [(int(line.rejected_at[i]), segments[int(latest[i])]) for i in chosen.tolist()]


def _window_can_be_full(
    ops: Sequence[Placed], rejection: tuple[float, float], rule: FirstWindows, need: int
) -> bool | None:
    """Whether windows started by admissions can be started so that the rejection's window holds
    ``need`` admissions by its instant (``limit``, less the rejection's cost beyond one): True,
    False, or None when out of budget. Those that may
    be left out here may also fall after the rejection; a window's capacity does not bind (the
    question is the rejection's, not whether the history is valid).

    Window by window, in time, as ``_windows_exist``: a window's start, then which of those that
    must fall before the rejection it holds (the others fall later, where they may join the
    rejection's window); the first window that reaches the rejection's instant is its window,
    and holds its starter and all that may fall between its start and that instant."""
    first_instant, last_instant = rejection
    apart, reach = least_apart(rule.window), rule.horizon
    tried = _Tried()

    def search(remaining: frozenset[int], earliest: float) -> bool:
        if tried.known(remaining, earliest):
            return False
        required = [i for i in remaining if not ops[i][2]]
        latest = min([last_instant, *(ops[i][1] for i in required)])
        # and where it first reaches the rejection
        reaching = {ops[i][0] - reach for i in remaining} | {first_instant - reach}
        for starter, start in _starts(ops, remaining, earliest, latest, reaching):
            if full_or_later(remaining - {starter}, start):
                return True
        return tried.fails(remaining, earliest)

    def full_or_later(rest: frozenset[int], start: float) -> bool:
        instant = min(last_instant, start + reach)
        if instant >= max(first_instant, start) - SLACK:
            joining = [i for i in rest if ops[i][0] <= instant + SLACK and ops[i][1] >= start]
            if 1 + len(joining) >= need:
                return True
        following = start + apart
        if following > last_instant + SLACK:
            return False
        kept = [i for i in rest if ops[i][1] >= following - SLACK or not ops[i][2]]
        forced = {i for i in kept if not ops[i][2] and ops[i][1] < following - SLACK}
        free = [i for i in kept if not ops[i][2] and i not in forced]
        for size in range(len(free) + 1):
            for chosen in combinations(free, size):
                if search(frozenset(kept) - forced - set(chosen), following):
                    return True
        return False

    return _searched(search, len(ops))


def _judge_segment(key: str, segment: list[Operation], rule: FirstWindows, what: str) -> Findings:
    admitted = [op for op in segment if op.outcome is Outcome.ALLOWED]
    drops = greedy([(op.invoke, end(op)) for op in admitted], rule)
    if not drops or _windows_found([(op.invoke, end(op)) for op in admitted], rule):
        return Findings()
    witnesses = hall_witnesses(key, admitted, drops, rule, what)
    if not witnesses:
        witnesses = _from_the_start(key, segment, admitted, rule, what)
    if witnesses:
        return Findings(witnesses)
    span = (min(op.invoke for op in segment), max(end(op) for op in admitted))
    if len(segment) <= EXACT_LIMIT:
        placed = [(op.invoke, end(op), op.outcome is not Outcome.ALLOWED) for op in segment]
        outcome = _windows_exist(placed, rule)
        if outcome is False:
            detail = f"no windows started by admissions hold these {len(admitted)} and keep {what}"
            return Findings([Witness(key, span, admitted, detail)])
        if outcome is True:
            return Findings()
    detail = f"could not decide whether these {len(admitted)} admissions keep {what}"
    return Findings(inconclusive=[Witness(key, span, admitted, detail, excess=0)])


def _windows_found(intervals: list[tuple[float, float]], rule: FirstWindows) -> bool:
    """Whether windows that keep the promise are found by trying, for each admission in turn
    (by deadline), both joining the open window and starting the next, keeping the
    ``FRONTIER`` most promising ways (earliest window start, then fewest in it): a way found
    proves the admissions valid; none found proves nothing."""
    apart, reach = least_apart(rule.window), rule.horizon
    ways: set[tuple[float, int]] = {(float("-inf"), rule.limit)}  # (window start, count)
    for invoke, deadline in sorted(intervals, key=lambda interval: (interval[1], interval[0])):
        following: set[tuple[float, int]] = set()
        for start, count in ways:
            if count < rule.limit and invoke <= start + reach + SLACK and deadline >= start:
                following.add((start, count + 1))
            new_start = max(invoke, start + apart)
            if new_start <= deadline + SLACK:
                following.add((min(new_start, deadline), 1))
        if not following:
            return False
        ways = set(sorted(following)[:FRONTIER])
    return True


def _from_the_start(
    key: str, segment: list[Operation], admitted: list[Operation], rule: FirstWindows, what: str
) -> list[Witness]:
    """Admissions wholly inside [s, t], s the segment's first invoke: the first window starts at s
    or later, so at most floor((t - s) / (window - EDGE)) + 1 windows hold them. The span with
    the most admissions beyond that room, if any."""
    first = min(op.invoke for op in segment)
    by_end = sorted(admitted, key=end)
    best: Witness | None = None
    for count, op in enumerate(by_end, start=1):
        last = end(op)
        if count < len(by_end) and end(by_end[count]) == last:
            continue  # those completing at the same instant are counted together
        room = rule.limit * (int((last - first + SLACK) // least_apart(rule.window)) + 1)
        if count > room and (best is None or count - room > best.excess):
            detail = (
                f"{count} admissions fall within [{first:.6f}, {last:.6f}], and the first window "
                f"starts at {first:.6f} or later; {what} allows {room}"
            )
            best = Witness(key, (first, last), by_end[:count], detail, count - room)
    return [] if best is None else [best]


def _windows_exist(ops: Sequence[Placed], rule: FirstWindows) -> bool | None:
    """Whether windows started by admissions can hold every operation that may not be left out,
    each window at most ``limit``: True, False, or None when out of budget.

    Window by window, in time: which operation starts it, where, and which it holds besides. For
    a given set held, the window starting as early as it can (at the previous window's end, at
    its starter's invoke, or where it first reaches the last of them to be invoked) leaves the
    next the most room, so those are the only starts tried."""
    apart, reach = least_apart(rule.window), rule.horizon
    tried = _Tried()

    def search(remaining: frozenset[int], earliest: float) -> bool:
        required = [i for i in remaining if not ops[i][2]]
        if not required:
            return True
        if tried.known(remaining, earliest):
            return False
        latest = min(ops[i][1] for i in required)  # no window starts after a deadline
        reaching = {ops[i][0] - reach for i in remaining}
        for starter, start in _starts(ops, remaining, earliest, latest, reaching):
            if fill(remaining - {starter}, start):
                return True
        return tried.fails(remaining, earliest)

    def fill(rest: frozenset[int], start: float) -> bool:
        following = start + apart
        kept = [i for i in rest if ops[i][1] >= start - SLACK]  # the others are left out
        held = [i for i in kept if ops[i][0] <= start + reach + SLACK]
        forced = [i for i in held if not ops[i][2] and ops[i][1] < following - SLACK]
        room = rule.limit - 1 - len(forced)
        if room < 0:
            return False
        free = sorted(set(held) - set(forced), key=lambda i: ops[i][1])
        later = set(kept) - set(forced)
        for size in range(min(room, len(free)), -1, -1):
            for chosen in combinations(free, size):
                after = later - set(chosen)
                # an unknown one that cannot reach a later window is left out
                after -= {i for i in after if ops[i][2] and ops[i][1] < following - SLACK}
                if search(frozenset(after), following):
                    return True
        return False

    return _searched(search, len(ops))


class _OutOfBudget(Exception):
    pass


class _Tried:
    """What a search over where windows start has tried: the states (those left, the earliest
    start) that failed, and how many more states it may try (``SEARCH_BUDGET``)."""

    def __init__(self) -> None:
        self.failed: set[tuple[frozenset[int], float]] = set()
        self.left = SEARCH_BUDGET

    def known(self, remaining: frozenset[int], earliest: float) -> bool:
        """Whether the state is known to fail; else trying it costs one of the budget
        (``_OutOfBudget`` once none is left)."""
        if (remaining, earliest) in self.failed:
            return True
        self.left -= 1
        if self.left < 0:
            raise _OutOfBudget
        return False

    def fails(self, remaining: frozenset[int], earliest: float) -> bool:
        """The state failed: remembered; False, for the search to return."""
        self.failed.add((remaining, earliest))
        return False


def _searched(search: Callable[[frozenset[int], float], bool], count: int) -> bool | None:
    """``search`` from the start (every operation left, no window yet); None out of budget."""
    try:
        return search(frozenset(range(count)), float("-inf"))
    except _OutOfBudget:
        return None


def _starts(
    ops: Sequence[Placed],
    remaining: frozenset[int],
    earliest: float,
    latest: float,
    reaching: set[float],
) -> Iterator[tuple[int, float]]:
    """Where the next window may start, for the searches above: each remaining operation as
    its starter, at the earliest it can (the previous window's end, or its own invoke), or at
    one of ``reaching`` (where the window first reaches an instant) within its interval."""
    for starter in sorted(remaining, key=lambda i: ops[i][0]):
        first, last = max(earliest, ops[starter][0]), min(ops[starter][1], latest)
        if first > last + SLACK:
            continue
        for start in sorted({first, *(s for s in reaching if first < s <= last)}):
            yield starter, start
