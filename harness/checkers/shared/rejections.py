"""The shape every wrongful-rejection check shares: a rejection is wrongful when the most of the
policy's budget any placement can have used by its instant still leaves room for one more."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ratelimit_harness.harness.checkers.shared.counting import Instants
from ratelimit_harness.harness.checkers.shared.units import distinct
from ratelimit_harness.harness.checkers.view.timeline import Timeline, decided_by
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness


def instants(line: Timeline) -> tuple[Instants, Instants]:
    """The invokes and the completions (``decided_by``) of the rejections, as arrays."""
    columns, rejected = line.columns, line.rejected_at
    return columns.invoke[rejected], columns.decided_by[rejected]


def wrongful(
    line: Timeline,
    most_used: Callable[[Operation], float],
    budget: float,
    unit: str,
    *,
    whole: bool = False,
    at_least: npt.NDArray[np.number[Any]] | None = None,
) -> list[Witness]:
    """``most_used(rejection)``: the most budget any placement can have used at any instant the
    rejection may have happened at (unknown operations counted as admissions). Wrongful when it
    is short of ``budget``; with ``whole`` (a bucket: one more admission takes a whole token),
    when at least one whole unit is left, so a bucket that refuses with one token left is
    caught. A rejection of a request that costs n (``Operation.cost``) is wrongful when n
    more fit: n - 1 more than that, or n whole units. Where attempts count (``Timeline``),
    ``most_used`` counted the rejection itself too: it is wrongful when n fit with it.

    ``at_least``, one per rejection, is a bound ``most_used`` never falls below (its value at one
    of the instants it tries, computed for all rejections at once): a rejection whose bound
    already leaves no room is not wrongful, and ``most_used`` is spared."""

    itself = line.attempts  # most_used counted the rejection's own cost: it is taken out
    suspects = line.rejected_at
    if at_least is not None:
        costs = line.columns.cost[suspects]
        bound = at_least - costs if itself else at_least
        suspects = suspects[room_left(bound, costs, budget, whole=whole)]
    rejections = line.columns.picked(suspects)
    found = []
    for op in distinct(rejections) if itself else rejections:  # units, where rejections count
        used = most_used(op) - (op.cost if itself else 0)
        if room_left(used, op.cost, budget, whole=whole):
            found.append(accused(line.key, op, used, f"{budget:.3g} {unit}", itself=itself))
    return found


def room_left(used: Any, cost: Any, budget: float, *, whole: bool) -> Any:
    """Whether ``cost`` more fit with ``used`` of ``budget`` used (``wrongful``'s rule)."""
    return used <= budget - cost if whole else used + (cost - 1) < budget


def accused(key: str, op: Operation, used: float, budget: str, *, itself: bool = False) -> Witness:
    """The witness of a wrongful rejection ``op``: at most ``used`` of ``budget`` (a number
    and its unit) used before it (``itself``) or in all."""
    used_how = "before it" if itself else "used"
    detail = f"rejected with at most {used:.3g} of {budget} {used_how}"
    if op.cost != 1:
        detail += f"; it asked for {op.cost}"
    return Witness(key, (op.invoke, decided_by(op)), [op], detail)
