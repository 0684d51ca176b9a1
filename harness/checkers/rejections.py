"""The shape every wrongful-rejection check shares: a rejection is wrongful when the most of the
policy's budget any placement can have used by its instant still leaves room for one more."""

from __future__ import annotations

from collections.abc import Callable

from harness.checkers.timeline import Timeline, decided_by
from harness.checkers.verdict import Witness
from harness.history import Operation


def wrongful(
    line: Timeline,
    most_used: Callable[[Operation], float],
    budget: float,
    unit: str,
    *,
    whole: bool = False,
) -> list[Witness]:
    """``most_used(rejection)``: the most budget any placement can have used at any instant the
    rejection may have happened at (unknown operations counted as admissions). Wrongful when it
    is short of ``budget``; with ``whole`` (a bucket: one more admission takes a whole token),
    when at least one whole unit is left, so a bucket that refuses with one token left is
    caught."""
    found = []
    for op in line.rejected:
        used = most_used(op)
        if used <= budget - 1 if whole else used < budget:
            detail = f"rejected with at most {used:.3g} of {budget:.3g} {unit} used"
            found.append(Witness(line.key, (op.invoke, decided_by(op)), [op], detail))
    return found
