"""A block (``block=B`` on a fixed window): once a request is refused because its window is full,
the identity is refused for B seconds from then, and then has a fresh budget.

A block only refuses more, and it lasts a window at least, so a window it ends is over before a
new one may start: a history that keeps a blocked window keeps the same window without a block.
Over-admission is judged as without one. A rejection is excused when it may lie within B of
another rejection, or of an unknown operation (which may have been one), placed before it: that
one may have started a block. That is sound, not exact: the one before may itself have been
refused by a block that ended before this rejection, and then this one is not excused.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence

from ratelimit_harness.harness.checkers.edges import EDGE
from ratelimit_harness.harness.checkers.placement import Findings
from ratelimit_harness.harness.checkers.timeline import decided_by, end
from ratelimit_harness.harness.history import Operation, Outcome

STARTERS = (Outcome.REJECTED, Outcome.UNKNOWN)  # what may have started a block


def unblocked(found: Findings, history: Sequence[Operation], block: float) -> Findings:
    """``found``'s wrongful rejections less those a block may excuse."""
    if not found.violations:
        return found
    by_key: dict[str, list[Operation]] = {}
    for op in history:
        if op.outcome in STARTERS:
            by_key.setdefault(op.key, []).append(op)
    starters = {key: _Starters(ops) for key, ops in by_key.items()}
    kept = [
        witness
        for witness in found.violations
        if not starters[witness.key].may_block(witness.operations[0], block)
    ]
    return Findings(kept, found.inconclusive)


class _Starters:
    """A key's rejected and unknown operations by invoke, with the latest two ends (of two
    operations) among each prefix, so that one operation can be left out of a question."""

    def __init__(self, starters: Sequence[Operation]) -> None:
        ops = sorted(starters, key=lambda op: op.invoke)
        self.invokes = [op.invoke for op in ops]
        self.best: list[tuple[tuple[float, int], tuple[float, int]]] = []
        first = second = (-math.inf, -1)
        for op in ops:
            entry = (end(op), id(op))
            if entry > first:
                first, second = entry, first
            elif entry > second:
                second = entry
            self.best.append((first, second))

    def may_block(self, rejection: Operation, block: float) -> bool:
        """Whether another of them may lie before ``rejection``, within ``block`` of it."""
        count = bisect_right(self.invokes, decided_by(rejection))
        if not count:
            return False
        first, second = self.best[count - 1]
        latest = second if first[1] == id(rejection) else first
        return latest[0] >= rejection.invoke - block - EDGE
