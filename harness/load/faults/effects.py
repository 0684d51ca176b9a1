"""What each fault of a load run's nemesis did to each rule: read from the faults the run marked
(``RUN_DIR/faults.jsonl``, ``harness.load.faults.nemesis``) and a rule's merged histories, the
clients' (what the users saw) and the instances'. Pure.

For one fault and one rule:

- ``requests``: the rule's requests the clients sent while the fault lasted;
- ``undecided``: those that got no decision (an answer that is neither 2xx nor 429: the
  limiter failed, or the instance could not be reached; a 2xx let through unchecked), from the
  fault's start until the rule recovered; a rule's ``on_error`` says what the limiter's failures
  got: refused (``closed``, a 503) or admitted unchecked (``open``);
- ``lost``: requests an instance took and never answered (in flight when the fault killed it),
  invoked after the previous fault ended and before this one did;
- ``recovery``: seconds from the fault's end until the rule decided normally again: the answer
  of the first decided request invoked after the last failure before the next fault (after the
  end itself if none failed); None when nothing was decided after it;
- ``over_admitted``: the over-admissions (of the verdict's witnesses) whose span the fault fell
  in: a window or a bucket's stretch that was open while the fault lasted, whose counts a Redis
  emptied by the fault forgot. One that overlaps no fault is the limiter's own;
- ``promises_broken``: likewise the broken promises of ``X-RateLimit-Remaining`` whose window,
  up to the promise, the fault fell in.

What the clients saw is read as columns (``Seen``), sorted by invoke, a block at a time: a run's
history of any length is scanned in bounded memory (``Seen.of_file`` keeps them on disk).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ratelimit_harness.harness.history import Operation, Outcome, iter_history
from ratelimit_harness.harness.history.loads import FaultEffect, FaultRecord
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.harness.load.faults.nemesis import FAULTS_FILE


def read_faults(run_dir: Path) -> list[FaultRecord]:
    """The faults the run marked, in order; a fault begun and never ended has no end. A line
    that does not parse is skipped (the file is only ever appended to)."""
    path = run_dir / FAULTS_FILE
    if not path.exists():
        return []
    faults: dict[tuple[str, int], FaultRecord] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
            key = (str(record["fault"]), int(record["turn"]))
            phase, at = record["phase"], float(record["time"])
        except (ValueError, KeyError, TypeError):
            continue
        if phase == "start":
            faults[key] = FaultRecord(key[0], key[1], at, None, str(record.get("detail", "")))
        elif phase == "end" and key in faults:
            faults[key].end = at
    return sorted(faults.values(), key=lambda fault: fault.start)


BLOCK = 1 << 20  # operations scanned at once (as columns)
READ_OPS = 1 << 16  # operations read at once (as objects) to make the columns

_FAILED = (Outcome.UNKNOWN, Outcome.ERROR)  # completed so: undecided
_DECIDED = (Outcome.ALLOWED, Outcome.REJECTED)
_KINDS = {  # each column's type, in ``Columns``' order
    "invoke": np.dtype(float),
    "end": np.dtype(float),
    "failed": np.dtype(bool),
    "decided": np.dtype(bool),
}


class Columns(NamedTuple):
    """Operations in order of invoke: each one's invoke, its end (completion, or invoke if it
    never completed), and whether it completed undecided (failed) or decided."""

    invoke: npt.NDArray[np.float64]
    end: npt.NDArray[np.float64]
    failed: npt.NDArray[np.bool_]
    decided: npt.NDArray[np.bool_]

    @classmethod
    def of(cls, ops: Sequence[Operation]) -> Columns:
        return cls(
            np.array([op.invoke for op in ops], dtype=float),
            np.array([op.invoke if op.complete is None else op.complete for op in ops], float),
            np.array([op.complete is not None and op.outcome in _FAILED for op in ops], bool),
            np.array([op.complete is not None and op.outcome in _DECIDED for op in ops], bool),
        )


@dataclass(frozen=True)
class Seen:
    """What the clients saw, as ``Columns``, read a block at a time: held in memory (``of``),
    or in files (``of_file``), each block read from them and dropped once scanned."""

    count: int
    last: float  # the latest end, 0 for none
    held: Columns | None = None
    folder: Path | None = None

    @classmethod
    def of(cls, ops: Sequence[Operation]) -> Seen:
        held = Columns.of(sorted(ops, key=lambda op: op.invoke))
        return cls(len(ops), float(held.end.max(initial=0.0)), held)

    @classmethod
    def of_file(cls, path: Path, folder: Path) -> Seen:
        """The history file ``path`` (sorted by invoke, as a merged one is), its columns
        written to ``folder``."""
        count, last = 0, 0.0
        with contextlib.ExitStack() as files:
            opened = [files.enter_context(open(folder / f"{n}.bin", "wb")) for n in _KINDS]
            for batch in _batched(iter_history(path), READ_OPS):
                columns = Columns.of(batch)
                for column, file in zip(columns, opened, strict=True):
                    column.tofile(file)
                count, last = count + len(batch), max(last, float(columns.end.max()))
        return cls(count, last, folder=folder)

    def between(self, low: float, high: float) -> tuple[int, int]:
        """The index range of the operations invoked in [low, high)."""
        invoke = self.held.invoke if self.held else self._mapped("invoke")
        first, last = np.searchsorted(invoke, (low, high))
        return int(first), int(last)

    def blocks(self, first: int, last: int) -> Iterator[Columns]:
        """The columns of the operations ``first`` to ``last``, a block at a time."""
        for start in range(first, last, BLOCK):
            stop = min(start + BLOCK, last)
            held = self.held
            if held:
                columns: list[Any] = [column[start:stop] for column in held]
            else:
                columns = [self._read(name, start, stop) for name in _KINDS]
            yield Columns(*columns)

    def _read(self, name: str, start: int, stop: int) -> Any:
        assert self.folder is not None
        kind, at = _KINDS[name], self.folder / f"{name}.bin"
        return np.fromfile(at, kind, count=stop - start, offset=start * kind.itemsize)

    def _mapped(self, name: str) -> Any:
        """A column mapped from its file (a binary search reads a few of its pages)."""
        assert self.folder is not None
        kind = _KINDS[name]
        return (
            np.memmap(self.folder / f"{name}.bin", kind, "r", shape=(self.count,))
            if self.count
            else np.zeros(0, kind)
        )


def _batched(ops: Iterator[Operation], size: int) -> Iterator[list[Operation]]:
    while batch := list(itertools.islice(ops, size)):
        yield batch


def fault_spans(seen: Seen, faults: Sequence[FaultRecord]) -> list[tuple[float, float]]:
    """Each fault's span; one never ended lasts until the run's end (its last answer seen, or
    the last fault's mark)."""
    run_end = max([seen.last, *(fault.end or fault.start for fault in faults)])
    return [(fault.start, run_end if fault.end is None else fault.end) for fault in faults]


def fell_in(witnesses: Sequence[Witness], spans: Sequence[tuple[float, float]]) -> list[int]:
    """For each span, the count of ``witnesses`` whose span overlaps it."""
    return [
        sum(w.excess for w in witnesses if w.span[0] <= end and start <= w.span[1])
        for start, end in spans
    ]


def effects(
    seen: Seen,
    unfinished: Sequence[float],
    faults: Sequence[FaultRecord],
    on_error: str,
    *,
    over: Sequence[Witness] = (),
    broken: Sequence[int] = (),
) -> list[FaultEffect]:
    """Each fault's effect on one rule, from what its clients ``seen``, the invokes of the
    requests its instances took and never answered (``unfinished``), the ``over``-admissions
    its verdict found and how many promises each fault ``broken`` (see the module's text), in
    order."""
    spanned = fault_spans(seen, faults)
    over_admitted = fell_in(over, spanned)
    lost_at = np.sort(np.asarray(unfinished, dtype=float))
    found = []
    for index, (start, end) in enumerate(spanned):
        since = faults[index - 1].end or faults[index - 1].start if index else -math.inf
        until = faults[index + 1].start if index + 1 < len(faults) else math.inf
        recovered = _recovered(seen, end, until)
        stop = until if recovered is None else min(recovered, until)
        lost = np.searchsorted(lost_at, (since, end))
        found.append(
            FaultEffect(
                requests=int(np.subtract(*seen.between(start, end)[::-1])),
                undecided=_failed_between(seen, *seen.between(start, stop)),
                lost=int(lost[1] - lost[0]),
                on_error=on_error,
                recovery=None if recovered is None else round(max(0.0, recovered - end), 3),
                over_admitted=over_admitted[index],
                promises_broken=broken[index] if broken else 0,
            )
        )
    return found


def _recovered(seen: Seen, end: float, until: float) -> float | None:
    """When the rule decided normally again after a fault that ended at ``end`` (the next one
    beginning at ``until``): the answer of the first decided request invoked after the last
    failure before ``until`` (a failure answered once the next fault began is that fault's)."""
    first, last = seen.between(end, until)
    settled = end
    for block in seen.blocks(first, last):
        failures = block.failed & (block.end < until)
        if failures.any():
            settled = max(settled, float(block.invoke[failures].max()))
    for block in seen.blocks(seen.between(settled, until)[0], last):
        decided = np.flatnonzero(block.decided)
        if decided.size:
            return float(block.end[decided[0]])
    return None


def _failed_between(seen: Seen, first: int, last: int) -> int:
    return sum(int(np.count_nonzero(block.failed)) for block in seen.blocks(first, last))
