"""Merging the journals of a run's processes into one history."""

from __future__ import annotations

import os
from collections.abc import Iterable
from operator import attrgetter

from ratelimit_harness.harness.history.errors import HistoryError
from ratelimit_harness.harness.history.journal import (
    Completed,
    GivenBack,
    Invoked,
    event_from_record,
)
from ratelimit_harness.harness.history.jsonl import write_history
from ratelimit_harness.harness.history.operation import Operation, Outcome
from ratelimit_harness.harness.history.records import collector_paused, read_batches


def merge_journals(paths: Iterable[str | os.PathLike[str]]) -> list[Operation]:
    """The operations of every journal in ``paths``, sorted by invoke time (ties keep the order
    of ``paths``, then of each journal).

    Each invoke is paired with its completion. An operation never completed (its process died,
    or stopped first) is kept, with outcome unknown and ``complete`` None. A give-back begun
    and never answered is kept as ``refund`` (its invoke, None). A journal's last line
    without its newline (a write cut short by a kill) is ignored. Raises HistoryError, naming
    the file and line, for any other bad line: not a journal record, an operation invoked twice,
    completed twice, completed without an invoke before it, or completed before its invoke.
    """
    operations: list[Operation] = []
    with collector_paused():
        for path in paths:
            operations.extend(_operations(path))
        operations.sort(key=attrgetter("invoke"))
    return operations


def merge_into_history(
    journal_paths: Iterable[str | os.PathLike[str]], history_path: str | os.PathLike[str]
) -> list[Operation]:
    """``merge_journals``, written to ``history_path`` as a history file; the operations."""
    operations = merge_journals(journal_paths)
    write_history(history_path, operations)
    return operations


def _operations(path: str | os.PathLike[str]) -> list[Operation]:
    """One journal's operations, in the order they were invoked."""
    invoked: dict[int, tuple[int, Invoked]] = {}
    completed: dict[int, tuple[int, Completed]] = {}
    given_back: dict[int, tuple[float, float | None]] = {}
    for numbers, events in read_batches(path, event_from_record, drop_torn_tail=True):
        for number, event in zip(numbers, events, strict=True):
            if isinstance(event, GivenBack):
                problem = _give_back_problem(event, completed.get(event.op), given_back)
                if problem:
                    raise HistoryError(problem, path, number)
                given_back[event.op] = event.onto(given_back.get(event.op))
                continue
            if isinstance(event, Invoked):
                if event.op in invoked:
                    first = invoked[event.op][0]
                    message = f"operation {event.op} invoked again (first on line {first})"
                    raise HistoryError(message, path, number)
                invoked[event.op] = (number, event)
                continue
            problem = _completion_problem(event, invoked.get(event.op), completed.get(event.op))
            if problem:
                raise HistoryError(problem, path, number)
            completed[event.op] = (number, event)
    return [
        _operation(begun, completed.get(op), given_back.get(op))
        for op, (_, begun) in invoked.items()
    ]


def _operation(
    begun: Invoked,
    completion: tuple[int, Completed] | None,
    refund: tuple[float, float | None] | None,
) -> Operation:
    process, key, invoked, cost = begun.process, begun.key, begun.time, begun.cost
    if completion is None:
        return Operation(process, key, invoked, None, Outcome.UNKNOWN, cost=cost)
    ended = completion[1]
    return Operation(
        process, key, invoked, ended.time, ended.outcome, ended.now, cost=cost, refund=refund
    )


def _give_back_problem(
    event: GivenBack,
    ended: tuple[int, Completed] | None,
    given_back: dict[int, tuple[float, float | None]],
) -> str | None:
    op, begun = event.op, given_back.get(event.op)
    if ended is None or ended[1].outcome is not Outcome.ALLOWED:
        return f"operation {op} is given back but did not complete allowed before"
    if event.event == "refund" and begun is not None:
        return f"operation {op} given back again"
    if event.event == "refunded" and (begun is None or begun[1] is not None):
        return f"operation {op}'s give-back answers but was not begun, or answered before"
    if event.time < (ended[1].time if begun is None else begun[0]):
        return (
            f"operation {op}'s give-back at {event.time!r} is out of order: did the clock go back?"
        )
    return None


def _completion_problem(
    event: Completed, begun: tuple[int, Invoked] | None, ended: tuple[int, Completed] | None
) -> str | None:
    if begun is None:
        return f"operation {event.op} completes but was not invoked before"
    if ended is not None:
        return f"operation {event.op} completed again (first on line {ended[0]})"
    line, invoke = begun
    if event.time < invoke.time:
        return (
            f"operation {event.op} completes at {event.time!r}, before its invoke at "
            f"{invoke.time!r} (line {line}): did the clock go back?"
        )
    return None
