"""fixed-window: at most ``limit`` admissions in each window [k*w, (k+1)*w).

Over-admission is decided exactly. Each admission may fall in any window its interval touches;
by the edge rule (``edges``) a limiter keeps one convention at its edges, so every edge may sit
up to ``EDGE`` from where it is, all shifted alike. The history is valid iff for some shift the
admissions can be given windows with no window over ``limit``: an interval-to-slot matching
that earliest-deadline-first solves optimally (Glover). Every admission EDF has to drop is one
that no placement saves: the count is the fewest admissions whose removal makes the history
valid (under the shift that needs fewest), and each comes with a Hall witness (a run of windows
that must hold more admissions than it has room for). Only the shifts where an admission's end
crosses an edge matter; with more than ``MAX_SHIFTS`` of them the history is given the benefit
of the doubt.

With ``phase=crc32`` each identity's windows start ``Policy.origin(identity)`` past each multiple
of the window: every instant is judged as that much earlier, and every window said that much
later.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable

import numpy as np

from ratelimit_harness.harness.checkers.placement.search import Findings
from ratelimit_harness.harness.checkers.shared.counting import Instants, Placeable
from ratelimit_harness.harness.checkers.shared.edges import EDGE, windows_touched
from ratelimit_harness.harness.checkers.shared.rejections import instants, wrongful
from ratelimit_harness.harness.checkers.view.timeline import (
    Timeline,
    decided_by,
    end,
    window_params,
)
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import Policy

MAX_SHIFTS = 64  # shifts of the edges tried before giving a history the benefit of the doubt


Number = Callable[[float, float], tuple[int, int]]  # an interval -> the first and last window
ANY_SIDE = "each admission on either side of an edge it comes within 1 ms of"
EVERY_SHIFT = "as they are, or all shifted by up to 1 ms"


def over_admissions(line: Timeline, policy: Policy) -> Findings:
    """A limiter keeps one convention at its edges, so a history is valid when, for one shift of
    every edge by at most ``EDGE`` (an instant on a shifted edge in the window it starts), each
    admission can be given a window it touches with none over ``limit``. Most histories match
    unshifted; one that does not match even with every admission free to count on either side
    of any edge it comes within ``EDGE`` of (``windows_touched``, a superset of every shift) is
    invalid; in between, the shifts where an admission's end crosses an edge are tried."""
    limit, window = window_params(policy)
    origin = policy.origin(line.key)
    columns, admitted = line.columns, line.admitted_at
    starts, ends = columns.invoke[admitted] - origin, columns.end[admitted] - origin
    if _matched_quickly(starts, ends, limit, window):
        return Findings()
    if not _matched_quickly(starts - EDGE, ends + EDGE, limit, window):
        either_side = _touched(window, origin)
        return Findings(_unmatched(line, (limit, window, origin), either_side, ANY_SIDE))
    shifts = _shifts(np.concatenate((starts, ends)), window)
    if len(shifts) > MAX_SHIFTS or any(
        _matched_quickly(starts - shift, ends - shift, limit, window) for shift in shifts
    ):
        return Findings()  # too many to try: the benefit of the doubt
    found = [
        _unmatched(line, (limit, window, origin), _shifted(window, origin + shift), EVERY_SHIFT)
        for shift in shifts
    ]
    return Findings(min(found, key=lambda witnesses: sum(w.excess for w in witnesses)))


def _shifted(window: float, shift: float) -> Number:
    """Windows numbered with every edge ``shift`` later."""
    return functools.partial(_numbered, window=window, shift=shift)


def _touched(window: float, origin: float) -> Number:
    """The windows (starting ``origin`` past each multiple of the window) an interval comes
    within ``EDGE`` of (``windows_touched``)."""
    return lambda first, last: windows_touched(first - origin, last - origin, window)


def _numbered(first: float, last: float, *, window: float, shift: float) -> tuple[int, int]:
    return math.floor((first - shift) / window), math.floor((last - shift) / window)


def _shifts(instants: Instants, window: float) -> list[float]:
    """The shifts of the edges (within ``EDGE``) between which no instant crosses an edge: the
    two extremes, each instant's distance past its nearest edge, and the midpoints between."""
    past = instants - np.round(instants / window) * window
    crossing = np.unique(past[np.abs(past) < EDGE]).tolist()
    marks = [-EDGE, *crossing, EDGE]
    return [*marks, *((a + b) / 2 for a, b in itertools.pairwise(marks))]


def _unmatched(
    line: Timeline, windows: tuple[int, float, float], number: Number, edges: str
) -> list[Witness]:
    """The admissions earliest-deadline-first cannot give a window, each windows numbered by
    ``number``, with Hall witnesses (``edges`` says how the edges were allowed to move).
    ``windows``: the limit, the window and the identity's origin."""
    limit = windows[0]
    spans = sorted((*number(op.invoke, end(op)), index) for index, op in enumerate(line.admitted))
    dropped: list[int] = []
    pending: list[tuple[int, int]] = []  # (last window, index)
    # windows are numbered from the epoch, negative before it: start at the first one
    position, current = 0, spans[0][0] if spans else 0
    while position < len(spans) or pending:
        if not pending:
            current = max(current, spans[position][0])
        while position < len(spans) and spans[position][0] <= current:
            heapq.heappush(pending, (spans[position][1], spans[position][2]))
            position += 1
        while pending and pending[0][0] < current:
            dropped.append(heapq.heappop(pending)[1])
        for _ in range(min(limit, len(pending))):
            heapq.heappop(pending)
        current += 1
    return _witnesses(line, spans, dropped, windows, number=number, edges=edges)


def _matched_quickly(starts: Instants, ends: Instants, limit: int, window: float) -> bool:
    """Whether every admission can be given a window, found the quick way: those that touch one
    window only are counted per window, at once, and the few that straddle a boundary share
    the room left, earliest deadline first. There is some matching exactly when there is one
    that gives each window as many of its own as fit (swap one in for a straddler: the count
    stays), so this drops nothing exactly when ``_unmatched`` drops nothing."""
    firsts, lasts = np.floor(starts / window), np.floor(ends / window)
    alone = firsts == lasts
    windows, counts = np.unique(firsts[alone], return_counts=True)
    if counts.size and counts.max() > limit:
        return False
    room = dict(zip(windows.tolist(), (limit - counts).tolist(), strict=True))
    spans = sorted(zip(firsts[~alone].tolist(), lasts[~alone].tolist(), strict=True))
    pending: list[float] = []  # last windows
    position, current = 0, spans[0][0] if spans else 0.0
    while position < len(spans) or pending:
        if not pending:
            current = max(current, spans[position][0])
        while position < len(spans) and spans[position][0] <= current:
            heapq.heappush(pending, spans[position][1])
            position += 1
        if pending[0] < current:
            return False
        for _ in range(min(room.get(current, limit), len(pending))):
            heapq.heappop(pending)
        current += 1
    return True


def _witnesses(
    line: Timeline,
    spans: list[tuple[int, int, int]],
    dropped: list[int],
    windows: tuple[int, float, float],
    *,
    number: Number,
    edges: str,
) -> list[Witness]:
    """For each dropped admission, the shortest run of windows ending at its last window that
    holds more admissions (whose intervals lie wholly inside it) than limit per window allows
    (``windows``: the limit, the window and the identity's origin)."""
    limit = windows[0]
    by_span: dict[tuple[int, int], Witness] = {}
    firsts = [first for first, _, _ in spans]
    runs: dict[tuple[int, int], tuple[int, list[Operation]]] = {}  # by the admission's windows
    for index in dropped:
        touched = number(line.admitted[index].invoke, end(line.admitted[index]))
        if touched not in runs:  # admissions dropped from the same windows share their run
            start, last = touched
            while True:
                inside = [
                    line.admitted[i]
                    for first, final, i in spans[
                        bisect_left(firsts, start) : bisect_right(firsts, last)
                    ]
                    if final <= last
                ]
                if len(inside) > limit * (last - start + 1) or start <= firsts[0]:
                    break
                start -= 1
            runs[touched] = (start, inside)
        start, inside = runs[touched]
        last = touched[1]
        found = by_span.get((start, last))
        if found is None:
            by_span[(start, last)] = run_witness(line.key, inside, (start, last), windows, edges)
        else:
            by_span[(start, last)] = Witness(
                found.key, found.span, found.operations, found.detail, found.excess + 1
            )
    return list(by_span.values())


def _widened(touched: tuple[int, int]) -> tuple[int, int]:
    """A range over the windows ``windows_touched`` gives, the last included."""
    return touched[0], touched[1] + 1


def run_witness(
    key: str,
    inside: list[Operation],
    run: tuple[int, int],
    windows: tuple[int, float, float],
    edges: str,
) -> Witness:
    """The witness that the admissions ``inside`` can only fall in the ``run`` of windows (the
    first and the last, numbered), which has too little room for them."""
    limit, window, origin = windows
    start, last = run
    count = last - start + 1
    span = (start * window + origin, (last + 1) * window + origin)
    where = f"window [{span[0]:.3f}, {span[1]:.3f})"
    if count > 1:
        where = f"{count} windows [{span[0]:.3f}, {span[1]:.3f})"
    room = limit * count
    detail = (
        f"{len(inside)} admissions can only fall in {where}, which has room for {room} ({edges})"
    )
    return Witness(key, span, inside, detail)


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    """Wrongful: wherever the rejection and the others fall, fewer than ``limit`` admissions
    (unknown ones counted) can sit in its window up to its own instant. By the edge rule, the
    rejection may count in any window it comes within ``EDGE`` of, and so may the admissions:
    window k holds, up to an instant t, those that can fall in [k*w - EDGE, t], for t up to
    (k+1)*w + EDGE."""
    limit, window = window_params(policy)
    origin = policy.origin(line.key)
    placeable = Placeable(line)

    def most_used(op: Operation) -> float:
        last = decided_by(op)
        most = 0
        for k in range(*_widened(windows_touched(op.invoke - origin, last - origin, window))):
            until = min(last, (k + 1) * window + origin + EDGE)
            since = k * window + origin - EDGE
            most = max(most, placeable.within(since, until, before=op.invoke))
        return most

    # most_used at the window of its invoke, for every rejection at once
    first, last = instants(line)
    k = np.floor((first - origin) / window)
    until = np.minimum(last, (k + 1) * window + origin + EDGE)
    at_least = placeable.within_each(k * window + origin - EDGE, until, before=first)
    return wrongful(line, most_used, limit, "admissions in its window", at_least=at_least)
