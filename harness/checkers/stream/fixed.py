"""Over-admission of aligned fixed windows, judged as a stream (``common``): the matching
of ``fixed_window`` (each admission given a window it touches, earliest deadline first), run as
the admissions come, in order of invoke.

It keeps the admissions the matching has not yet given a window (those of the open windows),
and those of the last ``KEPT_WINDOWS`` windows, from which a witness's run of windows is built
(fewer when they hold over ``KEPT_ADMISSIONS``). It gives up (``NotStreamable``) when a witness's
run reaches back past those kept, and when only a shift of every edge (``fixed_window._shifts``)
can match the admissions: the shifts are tried on the whole identity, and fewer than
``MANY_CROSSINGS`` instants near an edge leave them to try.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

from ratelimit_harness.harness.checkers.policies.fixed_window import ANY_SIDE, run_witness
from ratelimit_harness.harness.checkers.shared.edges import EDGE, windows_touched
from ratelimit_harness.harness.checkers.stream.common import NotStreamable
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import MAX_WITNESSES, Witness

KEPT_WINDOWS = 16  # windows of admissions kept back for a witness's run of windows
KEPT_ADMISSIONS = 100_000  # fewer windows kept back when they hold more admissions than this
MANY_CROSSINGS = 31  # instants this near an edge make more shifts than fixed_window tries

Entry = tuple[int, int, Operation]  # (last window, line number, admission), as EDF orders them


class _Matching:
    """Earliest deadline first over spans of windows (``fixed_window._unmatched``), the spans
    coming in order of their first window: each window takes up to ``limit`` of those released
    by then, the earliest last window first; one whose last window has passed is dropped, and
    ``dropped`` hears of it (the window, and what it dropped, in the order dropped)."""

    def __init__(self, limit: int, dropped: Callable[[int, list[Entry]], None] | None = None):
        self.limit = limit
        self.dropped = dropped
        self.pending: list[Entry] = []
        self.current: int | None = None  # the next window to take
        self.drops = 0

    def add(self, first: int, last: int, number: int, op: Operation) -> None:
        self.close(first)
        heapq.heappush(self.pending, (last, number, op))

    def close(self, until: int) -> None:
        """Take the windows before ``until``: every span they release has come."""
        while self.pending and self.current is not None and self.current < until:
            self._take()
        if not self.pending:
            self.current = until if self.current is None else max(self.current, until)

    def finish(self) -> None:
        while self.pending:
            self._take()

    def _take(self) -> None:
        window = self.current
        assert window is not None
        drops = []
        while self.pending and self.pending[0][0] < window:
            drops.append(heapq.heappop(self.pending))
        for _ in range(min(self.limit, len(self.pending))):
            heapq.heappop(self.pending)
        self.current = window + 1
        if drops:
            self.drops += len(drops)
            if self.dropped:
                self.dropped(window, drops)


class FixedWindowOver:
    """Over-admission, as ``fixed_window.over_admissions`` finds it: matched as they are, and
    with every admission free to count on either side of an edge it comes within ``EDGE`` of
    (whose drops are the witnesses); the instants near an edge counted for the shifts.
    ``windows``: the limit, the window and the identity's origin (``Policy.origin``)."""

    def __init__(self, key: str, windows: tuple[int, float, float]) -> None:
        self.key = key
        self.windows = windows
        self.limit, self.window, self.origin = windows
        self.as_they_are = _Matching(self.limit)
        self.either_side = _Matching(self.limit, self._dropped)
        self.crossing: set[float] = set()
        self.kept: dict[int, list[tuple[int, int, int, Operation]]] = {}  # by first window
        self.kept_count = 0
        self.kept_from = -math.inf  # every span whose first window is this or later is kept
        self.first_ever: int | None = None
        self.count = 0
        self.witnesses: list[Witness] = []

    def add(self, number: int, op: Operation) -> None:
        window, origin = self.window, self.origin
        assert op.complete is not None  # an admission completed
        start, end = op.invoke - origin, op.complete - origin
        self.as_they_are.add(math.floor(start / window), math.floor(end / window), number, op)
        first, last = windows_touched(start, end, window)
        self.either_side.add(first, last, number, op)
        if self.first_ever is None:
            self.first_ever = first
        self.kept.setdefault(first, []).append((first, last, number, op))
        self.kept_count += 1
        self._forget()
        if len(self.crossing) < MANY_CROSSINGS:
            for instant in (start, end):
                past = instant - round(instant / window) * window
                if abs(past) < EDGE:
                    self.crossing.add(past)

    def _forget(self) -> None:
        """Let go of the windows too far back for a witness's run (``KEPT_WINDOWS``), and of
        more while too many admissions are kept, but the last two windows."""
        current = self.either_side.current
        assert current is not None
        while self.kept:
            first = next(iter(self.kept))  # the oldest: first windows come in order
            too_many = self.kept_count > KEPT_ADMISSIONS and first < current - 2
            if first >= current - KEPT_WINDOWS and not too_many:
                break
            self.kept_count -= len(self.kept.pop(first))
            self.kept_from = first + 1

    def _dropped(self, window: int, drops: list[Entry]) -> None:
        """The witnesses of the admissions dropped at ``window`` (``fixed_window._witnesses``):
        for each, the shortest run of windows ending at its last that holds more admissions
        than it has room for; admissions dropped from one run share its witness."""
        origin = self.origin
        runs: dict[tuple[int, int], tuple[int, list[Operation]]] = {}
        by_run: dict[tuple[int, int], Witness] = {}
        for _, _, op in drops:
            assert op.complete is not None
            touched = windows_touched(op.invoke - origin, op.complete - origin, self.window)
            if touched not in runs:
                runs[touched] = self._run(*touched)
            start, inside = runs[touched]
            run = (start, touched[1])
            found = by_run.get(run)
            if found is None:
                by_run[run] = run_witness(self.key, inside, run, self.windows, ANY_SIDE)
            else:
                by_run[run] = Witness(
                    found.key, found.span, found.operations, found.detail, found.excess + 1
                )
        for witness in by_run.values():
            self.count += witness.excess
            if len(self.witnesses) < MAX_WITNESSES:
                self.witnesses.append(witness)

    def _run(self, start: int, last: int) -> tuple[int, list[Operation]]:
        """The first window of the shortest run ending at ``last`` (starting at ``start`` or
        before) whose admissions outnumber its room, and its admissions."""
        assert self.first_ever is not None
        while True:
            if start < self.kept_from:
                raise NotStreamable("a witness's run of windows reaches back past those kept")
            spans = sorted(
                span for first in range(start, last + 1) for span in self.kept.get(first, ())
            )
            inside = [op for _, final, _, op in spans if final <= last]
            if len(inside) > self.limit * (last - start + 1) or start <= self.first_ever:
                return start, inside
            start -= 1

    def finish(self) -> tuple[int, list[Witness]]:
        self.as_they_are.finish()
        self.either_side.finish()
        if not self.as_they_are.drops:
            return 0, []
        if self.either_side.drops:
            return self.count, self.witnesses
        if len(self.crossing) >= MANY_CROSSINGS:
            return 0, []  # more shifts than fixed_window tries: the benefit of the doubt
        raise NotStreamable("only a shift of every edge may match it: tried on the whole")
