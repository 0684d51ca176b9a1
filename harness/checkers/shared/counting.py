"""How many operations can be placed in a span, for the wrongful-rejection checks.

Every operation has invoke <= complete, so one that completed before ``since`` was invoked
before any ``until >= since`` too: the operations that can fall in [since, until] number
#(invoked by until) - #(completed before since). Two binary searches, no tree.

A request given back (``Operation.refund``) stops counting once its give-back has taken effect.
A rejection invoked after the give-back completed is judged without it: ``before`` leaves out
those given back by then. (Judged before that, it may still count, as an unknown one may.)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from ratelimit_harness.harness.checkers.view.timeline import Timeline

Instants = npt.NDArray[np.float64]
Counts = npt.NDArray[np.int64]
_ROWS = 256  # rejections judged against the given-back requests at once (bounds the memory)


class Placeable:
    """The operations that may have counted on one key: the admitted and the unknown ones."""

    def __init__(self, line: Timeline) -> None:
        columns, maybe = line.columns, line.maybe_at
        self.start_array = np.sort(columns.invoke[maybe])
        self.end_array = np.sort(columns.end[maybe])
        # the requests given back: when their give-backs completed, and their intervals
        back = maybe[:0]
        if columns.refunded:
            back = maybe[~np.isnan(columns.given_back[maybe])]
        self.back_by = columns.given_back[back] if back.size else np.empty(0)
        self.back_start, self.back_end = columns.invoke[back], columns.end[back]

    @cached_property
    def starts(self) -> list[float]:
        starts: list[float] = self.start_array.tolist()
        return starts

    @cached_property
    def ends(self) -> list[float]:
        ends: list[float] = self.end_array.tolist()
        return ends

    def within(
        self,
        since: float,
        until: float,
        *,
        since_open: bool = False,
        until_open: bool = False,
        before: float | None = None,
    ) -> int:
        """Operations that can be placed in [since, until]; either end may be open. ``before``:
        those given back by then left out."""
        invoked = (bisect_left if until_open else bisect_right)(self.starts, until)
        placed = invoked - (bisect_right if since_open else bisect_left)(self.ends, since)
        if before is None or not self.back_by.size:
            return placed
        return placed - int(self._given_back(since, until, before, since_open, until_open)[0])

    def within_each(
        self,
        since: Instants,
        until: Instants,
        *,
        since_open: bool = False,
        until_open: bool = False,
        before: Instants | None = None,
    ) -> Counts:
        """``within`` of each pair of ``since`` and ``until`` at once: the same counts."""
        invoked = np.searchsorted(self.start_array, until, "left" if until_open else "right")
        ended = np.searchsorted(self.end_array, since, "right" if since_open else "left")
        if before is None or not self.back_by.size:
            return invoked - ended
        return invoked - ended - self._given_back(since, until, before, since_open, until_open)

    def _given_back(
        self, since: Any, until: Any, before: Any, since_open: bool, until_open: bool
    ) -> Counts:
        """For each (since, until, before): the requests placeable in [since, until] whose
        give-back completed before ``before``, a block of rows at a time."""
        since, until, before = (
            np.atleast_1d(np.asarray(a, np.float64)) for a in (since, until, before)
        )
        counts = np.empty(len(since), np.int64)
        for first in range(0, len(since), _ROWS):
            rows = slice(first, first + _ROWS)
            given = self.back_by[None, :] < before[rows, None]
            starts, ends = self.back_start[None, :], self.back_end[None, :]
            given &= (starts < until[rows, None]) if until_open else (starts <= until[rows, None])
            given &= (ends > since[rows, None]) if since_open else (ends >= since[rows, None])
            counts[rows] = given.sum(axis=1)
        return counts

    def invoked_between(self, first: float, last: float) -> list[float]:
        """The invoke instants in (first, last]: where the count of placeable ones rises."""
        return self.starts[bisect_right(self.starts, first) : bisect_right(self.starts, last)]
