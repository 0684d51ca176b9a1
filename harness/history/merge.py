"""Merging the journals of a run's processes into one history.

Each journal is read once, its invokes paired with their completions as it goes. An operation
leaves memory as soon as it is whole: completed, and its give-back answered if it has one (a
first, quick pass over the journal finds which operations do). What stays is what is in flight,
so a journal of any length is paired in memory that holds its busiest moment.

``merge_journals`` sorts the operations in memory. ``merge_into_history`` writes them to a
history file in the same order without ever holding them all: sorted runs of ``RUN_OPS``
operations go to disk, then are merged.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ratelimit_harness.harness.history.errors import HistoryError
from ratelimit_harness.harness.history.files import replacing
from ratelimit_harness.harness.history.journal import (
    GIVE_BACK_EVENTS,
    Completed,
    GivenBack,
    Invoked,
    event_from_record,
)
from ratelimit_harness.harness.history.jsonl import format_operation
from ratelimit_harness.harness.history.operation import Operation, Outcome
from ratelimit_harness.harness.history.records import collector_paused, read_batches

RUN_OPS = 500_000  # operations sorted in memory at once by merge_into_history
# the completion of an operation whole once its give-back answered: allowed, as that required
_ALLOWED = (0, Completed(-1, -math.inf, Outcome.ALLOWED, None))


class Placed(NamedTuple):
    """An operation and its place in the merged history: by invoke time, then by journal (in
    the order given), then by the line of its invoke."""

    invoke: float
    journal: int
    line: int
    op: Operation


@dataclass
class Merged:
    """What ``merge_into_history`` wrote: how many operations, the first invoke and the last
    instant (a completion, or an invoke never completed), and the invoke of each operation
    never completed (few: those in flight when their process ended)."""

    count: int = 0
    first: float = math.inf
    last: float = -math.inf
    unfinished: list[float] = field(default_factory=list)

    def add(self, op: Operation) -> None:
        self.count += 1
        self.first = min(self.first, op.invoke)
        self.last = max(self.last, op.invoke if op.complete is None else op.complete)
        if op.complete is None:
            self.unfinished.append(op.invoke)


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
    with collector_paused():
        placed = [op for index, path in enumerate(paths) for op in _paired(path, index)]
        placed.sort(key=_place)
    return [found.op for found in placed]


def merge_into_history(
    journal_paths: Iterable[str | os.PathLike[str]],
    history_path: str | os.PathLike[str],
    *,
    run_ops: int | None = None,
) -> Merged:
    """``merge_journals`` written to ``history_path`` as a history file, in memory that does not
    grow with the journals (beyond ``run_ops``, ``RUN_OPS``, operations and those in flight);
    what it wrote.
    The sorted runs go to a folder under ``TMPDIR``, removed after."""
    merged, run_ops = Merged(), run_ops or RUN_OPS
    with collector_paused(), tempfile.TemporaryDirectory(prefix="ratelimit-harness-merge-") as tmp:
        runs: list[Path] = []
        batch: list[Placed] = []
        for index, path in enumerate(journal_paths):
            for found in _paired(path, index):
                merged.add(found.op)
                batch.append(found)
                if len(batch) >= run_ops:
                    runs.append(_spill(batch, Path(tmp) / str(len(runs))))
                    batch = []
        batch.sort(key=_place)
        last = ((found[:3], format_operation(found.op).encode()) for found in batch)
        _write_lines(history_path, heapq.merge(*map(_run, runs), last, key=itemgetter(0)))
    return merged


def _place(found: Placed) -> tuple[float, int, int]:
    return found[:3]


def _spill(batch: list[Placed], stem: Path) -> Path:
    """``batch``, sorted, as a run on disk: its history lines, and its places (``.npy``)."""
    batch.sort(key=_place)
    with open(stem.with_suffix(".jsonl"), "wb") as file:
        file.writelines(format_operation(found.op).encode() for found in batch)
    places = np.array([found[:3] for found in batch], dtype=[("i", "f8"), ("j", "i8"), ("l", "i8")])
    np.save(stem.with_suffix(".npy"), places)
    return stem


def _run(stem: Path, block: int = 8192) -> Iterator[tuple[tuple[float, int, int], bytes]]:
    """A run on disk, line by line, each with its place."""
    places = np.load(stem.with_suffix(".npy"), mmap_mode="r")
    with open(stem.with_suffix(".jsonl"), "rb") as file:
        for start in range(0, len(places), block):
            rows = places[start : start + block].tolist()
            yield from zip(map(tuple, rows), (file.readline() for _ in rows), strict=False)


def _write_lines(path: str | os.PathLike[str], lines: Iterable[tuple[object, bytes]]) -> None:
    """The lines to ``path``, written whole or not at all."""
    with replacing(path) as file:
        file.writelines(line for _, line in lines)


def _paired(path: str | os.PathLike[str], journal: int) -> Iterator[Placed]:
    """One journal's operations, each as soon as it is whole (see the module's text); those
    never whole at its end in the order they were invoked."""
    pairing = _Pairing(path, journal, _given_back(path))
    for numbers, events in read_batches(path, event_from_record, drop_torn_tail=True):
        for number, event in zip(numbers, events, strict=True):
            if isinstance(event, GivenBack):
                yield from pairing.give_back(number, event)
            elif isinstance(event, Invoked):
                pairing.invoke(number, event)
            else:
                yield from pairing.complete(number, event)
    yield from pairing.rest()


def _given_back(path: str | os.PathLike[str]) -> set[int]:
    """The operations of a journal that have a give-back record: a quick scan that decodes only
    the lines that mention one (read_batches, after, says what is wrong with a bad line)."""
    ops = set()
    with contextlib.suppress(OSError), open(path, "rb") as file:
        for line in file:
            if b"refund" in line:
                with contextlib.suppress(ValueError, TypeError, KeyError):
                    record = json.loads(line)
                    if record["event"] in GIVE_BACK_EVENTS:
                        ops.add(record["op"])
    return ops


class _Pairing:
    """One journal's records so far: the operations not yet whole, and which were."""

    def __init__(self, path: str | os.PathLike[str], journal: int, waiting: set[int]) -> None:
        self.path, self.journal = path, journal
        self.waiting = waiting  # operations that have a give-back: whole once it answers
        self.invoked: dict[int, tuple[int, Invoked]] = {}
        self.completed: dict[int, tuple[int, Completed]] = {}
        self.given_back: dict[int, tuple[float, float | None]] = {}
        self.done = _Numbers()

    def invoke(self, number: int, event: Invoked) -> None:
        if event.op in self.invoked or event.op in self.done:
            first = self._first_line(event.op, "invoke")
            message = f"operation {event.op} invoked again (first on line {first})"
            raise HistoryError(message, self.path, number)
        self.invoked[event.op] = (number, event)

    def complete(self, number: int, event: Completed) -> Iterator[Placed]:
        if event.op in self.done:
            first = self._first_line(event.op, "complete")
            message = f"operation {event.op} completed again (first on line {first})"
            raise HistoryError(message, self.path, number)
        problem = _completion_problem(
            event, self.invoked.get(event.op), self.completed.get(event.op)
        )
        if problem:
            raise HistoryError(problem, self.path, number)
        self.completed[event.op] = (number, event)
        if event.op not in self.waiting:
            yield self._whole(event.op)

    def give_back(self, number: int, event: GivenBack) -> Iterator[Placed]:
        if event.op in self.done:  # whole: its give-back answered already
            problem = _give_back_problem(event, _ALLOWED, {event.op: (-math.inf, -math.inf)})
        else:
            problem = _give_back_problem(event, self.completed.get(event.op), self.given_back)
        if problem:
            raise HistoryError(problem, self.path, number)
        self.given_back[event.op] = event.onto(self.given_back.get(event.op))
        if event.event == "refunded":
            yield self._whole(event.op)

    def rest(self) -> Iterator[Placed]:
        """The operations never whole, in the order they were invoked."""
        for op in list(self.invoked):
            yield self._whole(op)

    def _whole(self, op: int) -> Placed:
        line, begun = self.invoked.pop(op)
        completion = self.completed.pop(op, None)
        self.done.add(op)
        refund = self.given_back.pop(op, None)
        return Placed(begun.time, self.journal, line, _operation(begun, completion, refund))

    def _first_line(self, op: int, kind: str) -> int:
        """The line of operation ``op``'s first record of ``kind`` (read again: rare)."""
        pending = self.invoked if kind == "invoke" else self.completed
        if op in pending:
            return pending[op][0]
        for numbers, events in read_batches(self.path, event_from_record, drop_torn_tail=True):
            for number, event in zip(numbers, events, strict=True):
                same = type(event) is (Invoked if kind == "invoke" else Completed)
                if same and event.op == op:
                    return number
        raise AssertionError("unreachable: the operation was seen")


class _Numbers:
    """A set of operation numbers, small when they come nearly in order (as a journal numbers
    them): all below ``below`` are in it, and ``above`` holds the rest."""

    def __init__(self) -> None:
        self.below = 0
        self.above: set[int] = set()

    def __contains__(self, op: int) -> bool:
        return 0 <= op < self.below or op in self.above

    def add(self, op: int) -> None:
        self.above.add(op)
        while self.below in self.above:
            self.above.discard(self.below)
            self.below += 1


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
