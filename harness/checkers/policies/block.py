"""A block (``block=B`` on a fixed window): once a request is refused outside a block (its window
had no room for it), the identity is refused for B seconds from then, and then has a fresh budget.

A block only refuses more, and it lasts a window at least, so a window it ends is over before a
new one may start: a history that keeps a blocked window keeps the same window without a block.
Over-admission is judged as without one. A rejection is excused when another rejection, or an
unknown operation (which may have been one), may lie before it within B and may itself have
started a block: a *starter*.

Any rejection or unknown operation is a starter unless it certainly lay inside the block of a
*certain starter*: a rejection that no starter may lie before within B. Such a rejection was
refused outside a block, so its block ran from some instant of its interval for B; an operation
invoked after it completed, and completed before B after its invoke, was inside that block and
started none. A limiter that renews the block with every refusal in it is caught this way: the
refusals it renews with are no starters, and the identity's first request after B is refused
with none to excuse it.

Where the limit is one of a composite's (``alone`` false), a refusal may be another limit's, and
every rejection and unknown operation is a starter. That is sound, not exact: such a refusal may
have come inside a block, and then started none.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from ratelimit_harness.harness.checkers.placement.search import Findings
from ratelimit_harness.harness.checkers.shared.edges import EDGE
from ratelimit_harness.harness.checkers.view.timeline import decided_by, end
from ratelimit_harness.harness.history import Operation, Outcome

MAYBE_STARTERS = (Outcome.REJECTED, Outcome.UNKNOWN)  # what may have started a block


def unblocked(
    found: Findings, history: Sequence[Operation], block: float, *, alone: bool = True
) -> Findings:
    """``found``'s wrongful rejections less those a block may excuse. ``alone``: the blocking
    limit is the policy's only one, so that a refusal outside a block started one."""
    if not found.violations:
        return found
    by_key: dict[str, list[Operation]] = {}
    for op in history:
        if op.outcome in MAYBE_STARTERS:
            by_key.setdefault(op.key, []).append(op)
    blocks = {key: _Blocks(ops, block, alone=alone) for key, ops in by_key.items()}
    kept = [
        witness
        for witness in found.violations
        if not blocks[witness.key].may_be_blocked(witness.operations[0])
    ]
    return Findings(kept, found.inconclusive)


NONE = (-math.inf, -1)  # no operation: (end, id)


class _Blocks:
    """One key's rejected and unknown operations, and which of them may have started a block.

    The operations are settled in order of invoke, each as a starter or not, while the
    rejections are judged certain starters or not in order of completion: an operation's
    question waits only on the certain starters that completed before it was invoked."""

    def __init__(self, ops: Sequence[Operation], block: float, *, alone: bool) -> None:
        self.block = block
        self.ops = sorted(ops, key=lambda op: op.invoke)
        self.invokes = [op.invoke for op in self.ops]
        # the latest two ends (of two operations) among the starters of each prefix, so that
        # one operation can be left out of a question
        self.best: list[tuple[tuple[float, int], tuple[float, int]]] = []
        # certain starters, in order of completion, and the latest invoke of each prefix (the
        # one whose block reaches furthest)
        self.completes: list[float] = []
        self.reach: list[float] = []
        if alone:
            rejected = [op for op in self.ops if op.outcome is Outcome.REJECTED]
            for op in sorted(rejected, key=decided_by):
                self._settle(until=decided_by(op))
                if not self.may_be_blocked(op):
                    self.completes.append(decided_by(op))
                    self.reach.append(max(self.reach[-1], op.invoke) if self.reach else op.invoke)
        self._settle(until=math.inf)

    def may_be_blocked(self, rejection: Operation) -> bool:
        """Whether a starter other than ``rejection`` may lie before it, within B of it."""
        count = bisect_right(self.invokes, decided_by(rejection))
        if not count:
            return False
        first, second = self.best[count - 1]
        latest = second if first[1] == id(rejection) else first
        return latest[0] >= rejection.invoke - self.block - EDGE

    def _settle(self, until: float) -> None:
        """Settle each operation invoked by ``until``: a starter unless it lay inside the block
        of a certain starter that completed before it was invoked."""
        while len(self.best) < len(self.ops) and self.ops[len(self.best)].invoke <= until:
            op = self.ops[len(self.best)]
            first, second = self.best[-1] if self.best else (NONE, NONE)
            count = bisect_left(self.completes, op.invoke - EDGE)
            inside = count > 0 and end(op) < self.reach[count - 1] + self.block - EDGE
            entry = (end(op), id(op))
            if not inside and entry > first:
                first, second = entry, first
            elif not inside and entry > second:
                second = entry
            self.best.append((first, second))
