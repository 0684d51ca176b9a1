"""How many operations can be placed in a span, for the wrongful-rejection checks.

Every operation has invoke <= complete, so one that completed before ``since`` was invoked
before any ``until >= since`` too: the operations that can fall in [since, until] number
#(invoked by until) - #(completed before since). Two binary searches, no tree.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from harness.checkers.timeline import end
from harness.history import Operation


class Placeable:
    def __init__(self, operations: Sequence[Operation]) -> None:
        self.starts = sorted(op.invoke for op in operations)
        self.ends = sorted(end(op) for op in operations)

    def within(
        self, since: float, until: float, *, since_open: bool = False, until_open: bool = False
    ) -> int:
        """Operations that can be placed in [since, until]; either end may be open."""
        invoked = (bisect_left if until_open else bisect_right)(self.starts, until)
        return invoked - (bisect_right if since_open else bisect_left)(self.ends, since)

    def invoked_between(self, first: float, last: float) -> list[float]:
        """The invoke instants in (first, last]: where the count of placeable ones rises."""
        return self.starts[bisect_right(self.starts, first) : bisect_right(self.starts, last)]
