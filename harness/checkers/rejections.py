"""The shape every wrongful-rejection check shares: a rejection is wrongful when the most of the
policy's budget any placement can have used by its instant is still short of the budget."""

from __future__ import annotations

from collections.abc import Callable

from harness.checkers.timeline import Timeline
from harness.checkers.verdict import Witness
from harness.history import Operation


def wrongful(
    line: Timeline, most_used: Callable[[Operation], float], budget: float, unit: str
) -> list[Witness]:
    """``most_used(rejection)``: the most budget any placement can have used at any instant the
    rejection may have happened at (unknown operations counted as admissions)."""
    found = []
    for op in line.rejected:
        used = most_used(op)
        if used < budget:
            detail = f"rejected with at most {used:.3g} of {budget:.3g} {unit} used"
            found.append(Witness(line.key, (op.invoke, op.complete or op.invoke), [op], detail))
    return found
