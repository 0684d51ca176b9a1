"""Wrongful rejection under a window policy, judged as a stream (``streaming``), as
``fixed_window.wrongful_rejections`` and ``sliding_window.wrongful_rejections`` judge it: a
rejection is wrongful when, wherever it and the others fall, the admitted and unknown operations
that can be placed in its window leave room for one more.

A rejection is judged once an operation invoked after its completion has come: every operation
that can count against it has then come. It keeps the admitted and unknown operations invoked or
completed within a window of the earliest rejection not yet judged, and the rejections whose
completion is still ahead of the latest invoke. The rejections are judged a batch at a time:
first at the instant of their invoke, all at once; the few with room left there, at every
instant they may have happened at (``Room``).
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ratelimit_harness.harness.checkers.columns import Floats
from ratelimit_harness.harness.checkers.edges import EDGE, windows_touched
from ratelimit_harness.harness.checkers.rejections import accused, room_left
from ratelimit_harness.harness.checkers.streaming import Instants
from ratelimit_harness.harness.checkers.timeline import decided_by
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.verdict import MAX_WITNESSES, Witness

_INVOKE, _FIRST = operator.itemgetter(2), operator.itemgetter(0)
MAY_HAVE_COUNTED = (Outcome.ALLOWED, Outcome.UNKNOWN)  # an error is known not to have


class Placed:
    """The admitted and unknown operations: their invokes, and their completions (but those
    never completed: they never end before a window)."""

    def __init__(self) -> None:
        self.starts, self.ends = Instants(), Instants()

    def within(self, since: Any, until: Any) -> Any:
        """How many can be placed in [since, until], for each pair (``counting.Placeable``)."""
        return self.starts.at_most(until) - self.ends.before(since)


class Room(Protocol):
    """How a window policy counts what a rejection had used."""

    unit: str  # what is counted, in a witness's words
    lookback: float  # a window the rejection counts in starts less than this before its invoke

    def at_invoke(self, placed: Placed, invokes: Floats, lasts: Floats) -> Floats:
        """What each rejection used at least: in the window of its invoke, for all at once."""
        ...

    def most_used(self, placed: Placed, op: Operation, enough: int) -> int:
        """The most any placement has used in a window ``op`` may count in, up to its instant;
        or ``enough`` or more once that many are found (the rejection is then right)."""
        ...


class FixedRoom:
    """Aligned fixed windows (``fixed_window``): the admissions that can fall in a window the
    rejection may count in, from its start (less an edge) up to the rejection's instant."""

    unit = "admissions in its window"

    def __init__(self, window: float, origin: float) -> None:
        self.window, self.origin = window, origin
        self.lookback = window + 2 * EDGE

    def at_invoke(self, placed: Placed, invokes: Floats, lasts: Floats) -> Floats:
        window, origin = self.window, self.origin
        k = np.floor((invokes - origin - EDGE) / window)  # windows_touched's first
        until = np.minimum(lasts, (k + 1) * window + origin + EDGE)
        used: Floats = placed.within(k * window + origin - EDGE, until)
        return used

    def most_used(self, placed: Placed, op: Operation, enough: int) -> int:
        window, origin = self.window, self.origin
        last = decided_by(op)
        first_window, last_window = windows_touched(op.invoke - origin, last - origin, window)
        most = 0
        for k in range(first_window, last_window + 1):
            until = min(last, (k + 1) * window + origin + EDGE)
            since = k * window + origin - EDGE
            most = max(most, int(placed.within(np.float64(since), np.float64(until))))
            if most >= enough:
                break
        return most


class SlidingRoom:
    """A sliding window (``sliding_window``): the admissions that can fall in the window before
    each instant the rejection may have happened at, [t - window - EDGE, t]."""

    unit = "admissions in the window before it"

    def __init__(self, window: float) -> None:
        self.reach = self.lookback = window + EDGE

    def at_invoke(self, placed: Placed, invokes: Floats, lasts: Floats) -> Floats:
        used: Floats = placed.within(invokes - self.reach, invokes)
        return used

    def most_used(self, placed: Placed, op: Operation, enough: int) -> int:
        most = 0
        for t in [op.invoke, *placed.starts.between(op.invoke, decided_by(op))]:
            most = max(most, int(placed.within(np.float64(t - self.reach), np.float64(t))))
            if most >= enough:
                break
        return most


class Rejections:
    """The wrongful rejections of one identity's stream, by ``room``; ``limit`` admissions a
    window."""

    def __init__(self, key: str, limit: int, room: Room) -> None:
        self.key, self.limit, self.room = key, limit, room
        self.placed = Placed()
        self.waiting: list[tuple[float, int, Operation]] = []  # (completion, line, rejection)
        self.count = 0
        self.earliest: list[tuple[int, Witness]] = []  # (-line, witness): the first lines

    def add(self, numbers: Sequence[int], ops: Sequence[Operation], latest: float) -> None:
        """The next operations (``latest``: the last one's invoke)."""
        placed = [op for op in ops if op.outcome in MAY_HAVE_COUNTED]
        self.placed.starts.add(np.fromiter(map(_INVOKE, placed), np.float64, len(placed)))
        ends = [op.complete for op in placed if op.complete is not None]
        self.placed.ends.add(np.array(ends, dtype=np.float64))
        for number, op in zip(numbers, ops, strict=True):
            if op.outcome is Outcome.REJECTED:
                self.waiting.append((decided_by(op), number, op))
        self._judge(before=latest)
        # what lies before any window a rejection still to judge counts in is let go of
        earliest = min((op.invoke for _, _, op in self.waiting), default=latest)
        low = earliest - self.room.lookback - 2 * EDGE
        self.placed.starts.forget(low)
        self.placed.ends.forget(low)

    def _judge(self, before: float) -> None:
        """Judge the rejections that completed before ``before``."""
        waiting = self.waiting
        completions = np.fromiter(map(_FIRST, waiting), np.float64, len(waiting))
        due = completions < before
        if not due.any():
            return
        judged = [waiting[i] for i in np.flatnonzero(due).tolist()]
        self.waiting = [waiting[i] for i in np.flatnonzero(~due).tolist()]
        invokes = np.fromiter((op.invoke for _, _, op in judged), np.float64, len(judged))
        at_least = self.room.at_invoke(self.placed, invokes, completions[due])
        for (_, number, op), bound in zip(judged, at_least.tolist(), strict=True):
            if bound >= self.limit:
                continue  # no room then: right, whatever the other instants
            used = self.room.most_used(self.placed, op, enough=self.limit)
            if room_left(used, 1, self.limit, whole=False):
                self.count += 1
                budget = f"{self.limit:.3g} {self.room.unit}"
                entry = (-number, accused(self.key, op, used, budget))
                if len(self.earliest) < MAX_WITNESSES:
                    heapq.heappush(self.earliest, entry)
                elif entry[0] > self.earliest[0][0]:
                    heapq.heapreplace(self.earliest, entry)

    def finish(self) -> tuple[int, list[Witness]]:
        self._judge(before=math.inf)
        ordered = sorted(self.earliest, key=lambda entry: -entry[0])
        return self.count, [witness for _, witness in ordered]
