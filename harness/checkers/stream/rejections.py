"""Wrongful rejection judged as a stream (``common``), as the checkers judge it all at once:
a rejection is wrongful when, wherever it and the others fall, the admitted and unknown
operations that can count against it leave room for one more.

A rejection is judged once an operation invoked after its completion has come: every operation
that can count against it has then come. The rejections are judged a batch at a time: first at
the instant of their invoke, all at once; the few with room left there, at every instant they
may have happened at. What each policy counts, and keeps to count it, is its ``Room``:

- aligned fixed windows (``FixedRoom``), a sliding window (``SlidingRoom``) and the sliding
  counter (``CounterRoom``) keep the admitted and unknown operations invoked or completed within
  a window (two, for the counter) of the earliest rejection not yet judged;
- a token bucket (``bucket.BucketRoom``) keeps those invoked or completed since then,
  and, of all before, how many there were and the bucket's fullest state.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ratelimit_harness.harness.checkers.shared.edges import EDGE, windows_touched
from ratelimit_harness.harness.checkers.shared.rejections import accused, room_left
from ratelimit_harness.harness.checkers.stream.common import Instants
from ratelimit_harness.harness.checkers.view.columns import Floats
from ratelimit_harness.harness.checkers.view.timeline import decided_by
from ratelimit_harness.harness.history import Operation, Outcome
from ratelimit_harness.harness.history.verdict import MAX_WITNESSES, Witness

_FIRST = operator.itemgetter(0)
MAY_HAVE_COUNTED = (Outcome.ALLOWED, Outcome.UNKNOWN)  # an error is known not to have
Right = Callable[[float], bool]  # whether a rejection with this much used was right


class Room(Protocol):
    """How a policy counts what a rejection had used, and what it keeps to count it."""

    unit: str  # what is counted, in a witness's words
    budget: int  # how much there is
    whole: bool  # whether one more takes a whole unit (a bucket's token: ``wrongful``)

    def add(self, placed: Sequence[Operation], latest: float) -> None:
        """The next admitted and unknown operations, in order of invoke; every operation
        invoked before ``latest`` has then come."""
        ...

    def forget(self, earliest: float, latest: float) -> None:
        """No rejection invoked before ``earliest`` is left to judge, and every operation
        invoked up to ``latest`` has come."""
        ...

    def at_invoke(self, invokes: Floats, lasts: Floats) -> Floats:
        """What each rejection used at least: at the instant of its invoke, for all at once
        (``lasts``: their completions)."""
        ...

    def most_used(self, op: Operation, right: Right) -> float:
        """The most any placement has used at an instant ``op`` may have happened at; or,
        once ``right`` of what is found, that."""
        ...


class Placed:
    """The admitted and unknown operations: their invokes, and their completions (but those
    never completed: they never end before a window), in seconds after ``zero``."""

    def __init__(self, zero: float = 0.0) -> None:
        self.zero = zero
        self.starts, self.ends = Instants(), Instants()

    def add(self, placed: Sequence[Operation], latest: float) -> None:
        invokes = np.fromiter((op.invoke for op in placed), np.float64, len(placed))
        self.starts.add(invokes - self.zero)
        ends = [op.complete for op in placed if op.complete is not None]
        self.ends.add(np.array(ends, dtype=np.float64) - self.zero)

    def within(self, since: Any, until: Any) -> Any:
        """How many can be placed in [since, until], for each pair (``counting.Placeable``)."""
        return self.starts.at_most(until) - self.ends.before(since)


class _Windows(Placed):
    """A window policy's room: ``budget`` admissions a window; what lies more than
    ``lookback`` before the earliest rejection still to judge is let go of."""

    unit = ""
    whole = False

    def __init__(self, limit: int, lookback: float) -> None:
        super().__init__()
        self.budget, self.lookback = limit, lookback

    def forget(self, earliest: float, latest: float) -> None:
        low = earliest - self.lookback - 2 * EDGE
        self.starts.forget(low)
        self.ends.forget(low)


class FixedRoom(_Windows):
    """Aligned fixed windows (``fixed_window``): the admissions that can fall in a window the
    rejection may count in, from its start (less an edge) up to the rejection's instant."""

    unit = "admissions in its window"

    def __init__(self, limit: int, window: float, origin: float) -> None:
        super().__init__(limit, window + 2 * EDGE)  # a window starts less than this before
        self.window, self.origin = window, origin

    def at_invoke(self, invokes: Floats, lasts: Floats) -> Floats:
        window, origin = self.window, self.origin
        k = np.floor((invokes - origin - EDGE) / window)  # windows_touched's first
        until = np.minimum(lasts, (k + 1) * window + origin + EDGE)
        used: Floats = self.within(k * window + origin - EDGE, until)
        return used

    def most_used(self, op: Operation, right: Right) -> float:
        window, origin = self.window, self.origin
        last = decided_by(op)
        first_window, last_window = windows_touched(op.invoke - origin, last - origin, window)
        most = 0
        for k in range(first_window, last_window + 1):
            until = min(last, (k + 1) * window + origin + EDGE)
            since = k * window + origin - EDGE
            most = max(most, int(self.within(np.float64(since), np.float64(until))))
            if right(most):
                break
        return most


class SlidingRoom(_Windows):
    """A sliding window (``sliding_window``): the admissions that can fall in the window before
    each instant the rejection may have happened at, [t - window - EDGE, t]."""

    unit = "admissions in the window before it"

    def __init__(self, limit: int, window: float) -> None:
        super().__init__(limit, window + EDGE)
        self.reach = window + EDGE

    def at_invoke(self, invokes: Floats, lasts: Floats) -> Floats:
        used: Floats = self.within(invokes - self.reach, invokes)
        return used

    def most_used(self, op: Operation, right: Right) -> float:
        most = 0
        for t in [op.invoke, *self.starts.between(op.invoke, decided_by(op))]:
            most = max(most, int(self.within(np.float64(t - self.reach), np.float64(t))))
            if right(most):
                break
        return most


class CounterRoom(_Windows):
    """The sliding counter (``sliding_counter``): the highest estimate any placement gives at
    each instant the rejection may have happened at, and at each window's start in between:
    what can fall in the current window, and the previous window's rest, weighted."""

    unit = "of the estimate"

    def __init__(self, limit: int, window: float) -> None:
        super().__init__(limit, 2 * window)  # the previous window starts less than two before
        self.window = window

    def at_invoke(self, invokes: Floats, lasts: Floats) -> Floats:
        window, first = self.window, invokes
        start = np.floor(first / window) * window
        current = self.within(start, first)
        previous_only = self.within(start - window, first) - current
        used: Floats = current + previous_only * (1 - (first - start) / window)
        return used

    def most_used(self, op: Operation, right: Right) -> float:
        window, last = self.window, decided_by(op)
        instants = [op.invoke, *self.starts.between(op.invoke, last)]
        boundaries = range(math.floor(op.invoke / window) + 1, math.floor(last / window) + 1)
        highest = 0.0
        for t in [*instants, *(k * window for k in boundaries)]:
            start = math.floor(t / window) * window
            current = int(self.within(np.float64(start), np.float64(t)))
            previous_only = int(self.within(np.float64(start - window), np.float64(t))) - current
            highest = max(highest, current + previous_only * (1 - (t - start) / window))
            if right(highest):
                break
        return highest


class Rejections:
    """The wrongful rejections of one identity's stream, counted by ``room``."""

    def __init__(self, key: str, room: Room) -> None:
        self.key, self.room = key, room
        self.waiting: list[tuple[float, int, Operation]] = []  # (completion, line, rejection)
        self.count = 0
        self.earliest: list[tuple[int, Witness]] = []  # (-line, witness): the first lines

    def add(self, numbers: Sequence[int], ops: Sequence[Operation], latest: float) -> None:
        """The next operations (``latest``: the last one's invoke)."""
        self.room.add([op for op in ops if op.outcome in MAY_HAVE_COUNTED], latest)
        for number, op in zip(numbers, ops, strict=True):
            if op.outcome is Outcome.REJECTED:
                self.waiting.append((decided_by(op), number, op))
        self._judge(before=latest)
        earliest = min((op.invoke for _, _, op in self.waiting), default=latest)
        self.room.forget(earliest, latest)

    def _right(self, used: float) -> bool:
        return not room_left(used, 1, self.room.budget, whole=self.room.whole)

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
        at_least = self.room.at_invoke(invokes, completions[due])
        for (_, number, op), bound in zip(judged, at_least.tolist(), strict=True):
            if self._right(bound):
                continue  # no room then: right, whatever the other instants
            used = self.room.most_used(op, self._right)
            if not self._right(used):
                self.count += 1
                budget = f"{self.room.budget:.3g} {self.room.unit}"
                entry = (-number, accused(self.key, op, used, budget))
                if len(self.earliest) < MAX_WITNESSES:
                    heapq.heappush(self.earliest, entry)
                elif entry[0] > self.earliest[0][0]:
                    heapq.heapreplace(self.earliest, entry)

    def finish(self) -> tuple[int, list[Witness]]:
        self._judge(before=math.inf)
        ordered = sorted(self.earliest, key=lambda entry: -entry[0])
        return self.count, [witness for _, witness in ordered]
