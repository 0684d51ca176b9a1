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
import itertools
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
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
    usual_events,
)
from ratelimit_harness.harness.history.jsonl import format_operation
from ratelimit_harness.harness.history.operation import Operation, Outcome
from ratelimit_harness.harness.history.records import collector_paused, read_batches

SCAN_BYTES = 4 << 20  # of a journal, read at once looking for give-backs
RUN_OPS = 100_000  # operations sorted in memory at once by merge_into_history: about 40 MB
FAN_IN = 64  # runs merged at once
READ_ENTRIES = 1 << 14  # lines read at once from the runs merged together
WRITE_ENTRIES = 4096  # lines written to a run at once
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
    progress: Callable[[str, int, int], None] | None = None,
) -> Merged:
    """``merge_journals`` written to ``history_path`` as a history file, in memory that does not
    grow with the journals (beyond ``run_ops``, default ``RUN_OPS``, operations and those in
    flight); what it wrote. The sorted runs go to a folder under ``TMPDIR``, removed after; at
    most ``FAN_IN`` are merged at once (more are merged into fewer first).
    ``progress``, when given, hears ``("merging journals", done, of)`` as each is read."""
    paths = list(journal_paths)
    merged, run_ops = Merged(), run_ops or RUN_OPS
    with collector_paused(), tempfile.TemporaryDirectory(prefix="ratelimit-harness-merge-") as tmp:
        runs = _Runs(Path(tmp))
        batch: list[Placed] = []
        for index, path in enumerate(paths):
            for found in _paired(path, index):
                merged.add(found.op)
                batch.append(found)
                if len(batch) >= run_ops:
                    runs.spill(batch)
                    batch = []
            if progress:
                progress("merging journals", index + 1, len(paths))
        batch.sort(key=_place)
        last = ((found[:3], format_operation(found.op).encode()) for found in batch)
        with replacing(history_path) as file:
            file.writelines(line for _, line in runs.merged(last))
    return merged


def _place(found: Placed) -> tuple[float, int, int]:
    return found[:3]


Entry = tuple[tuple[float, int, int], bytes]  # a history line, and its operation's place
_PLACE = np.dtype([("invoke", "f8"), ("journal", "i8"), ("line", "i8")])


class _Runs:
    """Sorted runs of history lines on disk, in ``folder``: each a ``.jsonl`` of lines and a
    ``.places`` of their places (``_PLACE``), in the same order."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.made = folder, 0
        self.stems: list[Path] = []

    def spill(self, batch: list[Placed]) -> None:
        """``batch``, sorted, as a run."""
        batch.sort(key=_place)
        self._write((found[:3], format_operation(found.op).encode()) for found in batch)

    def merged(self, last: Iterator[Entry]) -> Iterator[Entry]:
        """Every run's entries and ``last``'s (sorted), in order."""
        while len(self.stems) >= FAN_IN:  # merge the oldest into one, to read few at once
            group, self.stems = self.stems[:FAN_IN], self.stems[FAN_IN:]
            self._write(heapq.merge(*(self._read(stem, FAN_IN) for stem in group), key=_first))
            for stem in group:
                stem.with_suffix(".jsonl").unlink()
                stem.with_suffix(".places").unlink()
        fan = len(self.stems) + 1
        return heapq.merge(*(self._read(stem, fan) for stem in self.stems), last, key=_first)

    def _write(self, entries: Iterable[Entry]) -> None:
        stem = self.folder / str(self.made)
        self.made += 1
        with (
            open(stem.with_suffix(".jsonl"), "wb") as lines,
            open(stem.with_suffix(".places"), "wb") as places,
        ):
            entries = iter(entries)
            while block := list(itertools.islice(entries, WRITE_ENTRIES)):
                lines.writelines(line for _, line in block)
                np.array([place for place, _ in block], dtype=_PLACE).tofile(places)
        self.stems.append(stem)

    def _read(self, stem: Path, fan: int) -> Iterator[Entry]:
        """A run's entries, a block at a time (``READ_ENTRIES`` shared by the ``fan`` runs
        read together)."""
        block = max(64, READ_ENTRIES // fan)
        size = stem.with_suffix(".places").stat().st_size // _PLACE.itemsize
        if not size:
            return
        with (
            open(stem.with_suffix(".places"), "rb") as places,
            open(stem.with_suffix(".jsonl"), "rb") as file,
        ):
            for _ in range(0, size, block):  # read, not mapped: what was read is not kept
                rows = np.fromfile(places, _PLACE, count=block).tolist()
                yield from zip(rows, (file.readline() for _ in rows), strict=False)


def _first(entry: Entry) -> tuple[float, int, int]:
    return entry[0]


def _paired(path: str | os.PathLike[str], journal: int) -> Iterator[Placed]:
    """One journal's operations, each as soon as it is whole (see the module's text); those
    never whole at its end in the order they were invoked."""
    pairing = _Pairing(path, journal, _given_back(path))
    batches = read_batches(path, event_from_record, fast=usual_events, drop_torn_tail=True)
    invoke, complete, give_back = pairing.invoke, pairing.complete, pairing.give_back
    for numbers, events in batches:
        for number, event in zip(numbers, events, strict=True):
            if type(event) is Invoked:
                invoke(number, event)
                continue
            if type(event) is Completed:
                whole = complete(number, event)
            else:
                whole = give_back(number, event)  # type: ignore[arg-type]  # the kind left
            if whole is not None:
                yield whole
    yield from pairing.rest()


def _given_back(path: str | os.PathLike[str]) -> set[int]:
    """The operations of a journal that have a give-back record: a quick scan that decodes only
    the lines that mention one (read_batches, after, says what is wrong with a bad line)."""
    ops, carry = set(), b""
    with contextlib.suppress(OSError), open(path, "rb") as file:
        while block := file.read(SCAN_BYTES):
            lines, _, carry = (carry + block).rpartition(b"\n")
            if b"refund" in lines:  # rare: most journals have none
                ops.update(_given_back_in(lines.split(b"\n")))
    return ops | _given_back_in([carry])


def _given_back_in(lines: list[bytes]) -> set[int]:
    ops = set()
    for line in lines:
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
        if event.op in self.invoked or event.op < self.done.below or event.op in self.done:
            first = self._first_line(event.op, "invoke")
            message = f"operation {event.op} invoked again (first on line {first})"
            raise HistoryError(message, self.path, number)
        self.invoked[event.op] = (number, event)

    def complete(self, number: int, event: Completed) -> Placed | None:
        """The operation, if this completion makes it whole."""
        op = event.op
        begun = self.invoked.get(op)
        if begun is None or op in self.completed or event.time < begun[1].time:
            self._refuse(number, event, begun)
        if op in self.waiting:
            self.completed[op] = (number, event)
            return None
        del self.invoked[op]
        self.done.add(op)
        line, invoked = begun  # type: ignore[misc]
        return Placed(invoked.time, self.journal, line, _operation(invoked, event, None))

    def _refuse(self, number: int, event: Completed, begun: tuple[int, Invoked] | None) -> None:
        if event.op in self.done:
            first = self._first_line(event.op, "complete")
            message = f"operation {event.op} completed again (first on line {first})"
            raise HistoryError(message, self.path, number)
        problem = _completion_problem(event, begun, self.completed.get(event.op))
        raise HistoryError(problem or "unreachable", self.path, number)

    def give_back(self, number: int, event: GivenBack) -> Placed | None:
        """The operation, if this give-back makes it whole."""
        if event.op in self.done:  # whole: its give-back answered already
            problem = _give_back_problem(event, _ALLOWED, {event.op: (-math.inf, -math.inf)})
        else:
            problem = _give_back_problem(event, self.completed.get(event.op), self.given_back)
        if problem:
            raise HistoryError(problem, self.path, number)
        self.given_back[event.op] = event.onto(self.given_back.get(event.op))
        return self._whole(event.op) if event.event == "refunded" else None

    def rest(self) -> Iterator[Placed]:
        """The operations never whole, in the order they were invoked."""
        for op in list(self.invoked):
            yield self._whole(op)

    def _whole(self, op: int) -> Placed:
        line, begun = self.invoked.pop(op)
        completion = self.completed.pop(op, None)
        self.done.add(op)
        refund = self.given_back.pop(op, None)
        ended = None if completion is None else completion[1]
        return Placed(begun.time, self.journal, line, _operation(begun, ended, refund))

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
        if op == self.below and not self.above:
            self.below += 1  # the usual: the next in order
            return
        self.above.add(op)
        while self.below in self.above:
            self.above.discard(self.below)
            self.below += 1


def _operation(
    begun: Invoked,
    ended: Completed | None,
    refund: tuple[float, float | None] | None,
) -> Operation:
    process, key, invoked, cost = begun.process, begun.key, begun.time, begun.cost
    if ended is None:
        return Operation(process, key, invoked, None, Outcome.UNKNOWN, cost=cost)
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
