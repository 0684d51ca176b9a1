"""Journals merged into a history give back the operations they were written from.

Each journal is drawn as operations (a key, an invoke, perhaps a completion, perhaps a give-back
begun or answered), its records written in any order that keeps each operation's own records in
turn: so invokes come out of time order, as when threads share a journal, and an operation can
wait long for its completion or give-back. The merged history must be those operations sorted by
invoke (ties in the order of the journals, then of the invoke records), whether it is sorted in
memory (``merge_journals``) or in runs on disk (``merge_into_history``), however many runs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import NamedTuple

from hypothesis import given, settings
from hypothesis import strategies as st

from ratelimit_harness.harness.history import (
    Operation,
    Outcome,
    merge,
    merge_into_history,
    merge_journals,
    read_history,
)
from ratelimit_harness.harness.history.journal import complete_line, give_back_line, invoke_line

OUTCOMES = [Outcome.ALLOWED, Outcome.REJECTED, Outcome.ERROR, Outcome.UNKNOWN]


class Drawn(NamedTuple):
    """One operation and when each of its records comes in its journal (``order``)."""

    op: Operation
    order: tuple[int, ...]  # one place per record: invoke, complete, refund, refunded


@st.composite
def operations(draw: st.DrawFn, process: str) -> Drawn:
    key = draw(st.sampled_from(["a", "b"]))
    invoke = float(draw(st.integers(0, 20)))
    places = [draw(st.integers(0, 40))]
    if draw(st.integers(0, 5)) == 0:  # in flight when its process ended
        return Drawn(Operation(process, key, invoke, None, Outcome.UNKNOWN), tuple(places))
    complete = invoke + draw(st.integers(0, 4))
    outcome = draw(st.sampled_from(OUTCOMES))
    stages = draw(st.integers(0, 2)) if outcome is Outcome.ALLOWED else 0
    refund = None
    if stages:
        begun = complete + draw(st.integers(0, 2))
        refund = (begun, begun + 1 if stages == 2 else None)
    for _ in range(1 + stages):
        places.append(places[-1] + draw(st.integers(0, 10)))
    op = Operation(process, key, invoke, complete, outcome, refund=refund)
    return Drawn(op, tuple(places))


def journal(drawn: list[Drawn]) -> tuple[bytes, list[Operation]]:
    """The journal's bytes, and its operations in the order of their invoke records."""
    records = []
    for index, (op, places) in enumerate(drawn):
        records.append((places[0], index, 0, op))
        for stage, place in enumerate(places[1:], start=1):
            records.append((place, index, stage, op))
    records.sort(key=lambda record: record[:3])
    numbers: dict[int, int] = {}  # op number, given as its invoke is written
    lines, invoked = [], []
    for _, index, stage, op in records:
        if stage == 0:
            numbers[index] = len(numbers)
            invoked.append(op)
            lines.append(invoke_line(numbers[index], '"p"', f'"{op.key}"', op.invoke))
        elif stage == 1:
            assert op.complete is not None
            outcome = f'"{op.outcome.value}"'
            lines.append(complete_line(numbers[index], op.complete, outcome, None))
        else:
            assert op.refund is not None
            at = op.refund[0] if stage == 2 else op.refund[1]
            assert at is not None
            lines.append(give_back_line(numbers[index], at, "refund" if stage == 2 else "refunded"))
    return b"".join(lines), invoked


@settings(deadline=None, max_examples=300)
@given(
    journals=st.lists(st.lists(operations("p"), max_size=12), min_size=1, max_size=3),
    run_ops=st.integers(1, 5),
    fan_in=st.integers(2, 4),
)
def test_merged_journals_are_their_operations_sorted_by_invoke(
    journals: list[list[Drawn]], run_ops: int, fan_in: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths, expected = [], []
        for n, drawn in enumerate(journals):
            content, invoked = journal(drawn)
            path = Path(folder, f"{n}.jsonl")
            path.write_bytes(content)
            paths.append(path)
            expected.extend(invoked)
        expected.sort(key=lambda op: op.invoke)  # stable: journal order, then invoke records'
        assert merge_journals(paths) == expected
        kept, merge.FAN_IN = merge.FAN_IN, fan_in  # runs merged into fewer first, as when many
        try:
            merged = merge_into_history(paths, Path(folder, "history.jsonl"), run_ops=run_ops)
        finally:
            merge.FAN_IN = kept
        assert read_history(Path(folder, "history.jsonl")) == expected
        assert merged.count == len(expected)
        assert sorted(merged.unfinished) == [op.invoke for op in expected if op.complete is None]
