"""Weighted requests, and the placements that judge several limits at once.

A request that costs n (``Operation.cost``) is judged as n units at its instant. The checkers
count admissions, so each admitted or unknown request is given to them n times (``as_units``):
a rejection then counts every unit already used, and a window or a bucket holds units, not
requests. The copies are the same object, so a witness lists each request once (``distinct``).

The checkers place each unit on its own, anywhere in the request's interval. A real limiter
takes every unit of one request at one instant, and takes a request at one instant for every
limit of a composite policy. Placing more freely only finds fewer violations: an over-admission
found so is real. When none is found, one placement that keeps every rule with every request at
one instant proves the history valid (``single_instants``: each request at the instant its
limiter said, at its invoke, or at its completion). When none of those does, the verdict says
inconclusive rather than valid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from ratelimit_harness.harness.checkers.view.timeline import decided_by
from ratelimit_harness.harness.history import Operation, Outcome

COUNTED = (Outcome.ALLOWED, Outcome.UNKNOWN)  # the outcomes that may have used the budget


def as_units(history: Sequence[Operation], *, attempts: bool = False) -> list[Operation]:
    """``history`` with each admitted or unknown request repeated once per unit of its cost
    (``attempts``: each rejected one too, as a policy that counts attempts counts it)."""
    counted = (*COUNTED, Outcome.REJECTED) if attempts else COUNTED
    units: list[Operation] = []
    for op in history:
        if op.cost != 1 and op.outcome in counted:
            units += [op] * op.cost
        else:
            units.append(op)
    return units


def distinct(operations: Sequence[Operation]) -> list[Operation]:
    """``operations`` with each request once (a request's units are one object)."""
    return list({id(op): op for op in operations}.values())


def spread(history: Sequence[Operation]) -> bool:
    """Whether some request that may have counted could have taken effect at more than one
    instant (without that, every placement is already one instant per request)."""
    return any(op.outcome in COUNTED and op.complete != op.invoke for op in history)


def _said(op: Operation) -> float:
    """The instant the limiter said it decided at, where that lies in the interval."""
    said = op.now is not None and op.invoke <= op.now <= decided_by(op)
    return op.now if said and op.now is not None else op.invoke


INSTANTS: tuple[Callable[[Operation], float], ...] = (_said, lambda op: op.invoke, decided_by)


def single_instants(history: Sequence[Operation]) -> Iterator[list[Operation]]:
    """The history with each request that may have counted pinned to one instant, in each of
    the ways ``INSTANTS`` gives."""
    for instant in INSTANTS:
        yield [
            op._replace(invoke=(at := instant(op)), complete=at) if op.outcome in COUNTED else op
            for op in history
        ]
