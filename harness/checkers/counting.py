"""How many operations can be placed in a span, for the wrongful-rejection checks.

Every operation has invoke <= complete, so one that completed before ``since`` was invoked
before any ``until >= since`` too: the operations that can fall in [since, until] number
#(invoked by until) - #(completed before since). Two binary searches, no tree.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import cached_property

import numpy as np
import numpy.typing as npt

from ratelimit_harness.harness.checkers.timeline import Timeline

Instants = npt.NDArray[np.float64]
Counts = npt.NDArray[np.int64]


class Placeable:
    """The operations that may have counted on one key: the admitted and the unknown ones."""

    def __init__(self, line: Timeline) -> None:
        maybe = line.maybe_at
        self.start_array = np.sort(line.columns.invoke[maybe])
        self.end_array = np.sort(line.columns.end[maybe])

    @cached_property
    def starts(self) -> list[float]:
        starts: list[float] = self.start_array.tolist()
        return starts

    @cached_property
    def ends(self) -> list[float]:
        ends: list[float] = self.end_array.tolist()
        return ends

    def within(
        self, since: float, until: float, *, since_open: bool = False, until_open: bool = False
    ) -> int:
        """Operations that can be placed in [since, until]; either end may be open."""
        invoked = (bisect_left if until_open else bisect_right)(self.starts, until)
        return invoked - (bisect_right if since_open else bisect_left)(self.ends, since)

    def within_each(
        self,
        since: Instants,
        until: Instants,
        *,
        since_open: bool = False,
        until_open: bool = False,
    ) -> Counts:
        """``within`` of each pair of ``since`` and ``until`` at once: the same counts."""
        invoked = np.searchsorted(self.start_array, until, "left" if until_open else "right")
        ended = np.searchsorted(self.end_array, since, "right" if since_open else "left")
        return invoked - ended

    def invoked_between(self, first: float, last: float) -> list[float]:
        """The invoke instants in (first, last]: where the count of placeable ones rises."""
        return self.starts[bisect_right(self.starts, first) : bisect_right(self.starts, last)]
