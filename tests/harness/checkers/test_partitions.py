"""A history file judged in parts: read the way ``read_history`` reads it (blank lines, a last
line without its newline, a bad line named by its number), in processes of its own, and judged
as ``check`` judges it whole (the property test draws the histories; these are the edges)."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

from ratelimit_harness.harness.checkers import check, partitions
from ratelimit_harness.harness.checkers.partitions import check_file, judge_file, part_count
from ratelimit_harness.harness.errors import EnvironmentFailure
from ratelimit_harness.harness.history import HistoryError, Operation, Outcome, write_history
from ratelimit_harness.harness.history.jsonl import format_operation, read_history
from ratelimit_harness.limiters import Policy

POLICY = Policy.parse("fixed-window:limit=3,window=1")


def history(operations: int, keys: int = 40, seed: int = 1) -> list[Operation]:
    """Requests of ``keys`` identities, 40 a second, each admitted at random: some windows over
    the limit, some rejections wrongful, a few never answered."""
    rng = random.Random(seed)
    made = []
    for number in range(operations):
        t = 1_700_000_000 + number / 40
        outcome = rng.choice([Outcome.ALLOWED] * 6 + [Outcome.REJECTED] * 3 + [Outcome.UNKNOWN])
        complete = None if outcome is Outcome.UNKNOWN else t + rng.uniform(0.0001, 0.003)
        key = f"user:{rng.randrange(keys)}"
        made.append(Operation(f"app-{number % 3}", key, t, complete, outcome, keys=(f"rl:{key}",)))
    return made


def as_json(verdict: object) -> str:
    return json.dumps(verdict.to_json(), sort_keys=True)  # type: ignore[attr-defined]


@pytest.mark.parametrize("workers", [1, 2])
def test_parts_judged_in_processes_of_their_own_give_the_verdict_of_the_whole(
    tmp_path: Path, workers: int
) -> None:
    path = tmp_path / "history.jsonl"
    operations = history(6_000)
    write_history(path, operations)
    whole = check(operations, POLICY, {"rl:user:1": -1.0})
    parts = check_file(path, POLICY, {"rl:user:1": -1.0}, workers=workers, part_bytes=20_000)
    assert whole.count("over-admission")
    assert whole.count("wrongful-rejection")
    assert as_json(parts) == as_json(whole)


def test_blank_lines_and_a_last_line_without_its_newline_are_read_as_read_history_reads_them(
    tmp_path: Path,
) -> None:
    lines = list(map(format_operation, history(800)))
    lines[10:10] = ["\n", "   \n"]
    lines[-1] = lines[-1].rstrip("\n")
    path = tmp_path / "history.jsonl"
    path.write_text("".join(lines))
    parts = check_file(path, POLICY, workers=2, part_bytes=2_000)
    assert as_json(parts) == as_json(check(read_history(path), POLICY))


def test_a_bad_line_is_named_by_its_number_in_the_whole_file(tmp_path: Path) -> None:
    lines = list(map(format_operation, history(3_000)))
    lines[2_500] = lines[2_500].replace('"allowed"', '"maybe"').replace('"rejected"', '"maybe"')
    lines[2_500] = lines[2_500].replace('"unknown"', '"maybe"')
    path = tmp_path / "history.jsonl"
    path.write_text("".join(lines))
    with pytest.raises(HistoryError) as whole:
        read_history(path)
    with pytest.raises(HistoryError) as parts:
        check_file(path, POLICY, workers=2, part_bytes=10_000)
    assert parts.value.line == 2_501
    assert str(parts.value) == str(whole.value)


def test_a_missing_file_is_said_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"history\.jsonl: cannot read: No such file"):
        check_file(tmp_path / "history.jsonl", POLICY)


def test_parts_that_would_not_fit_on_the_disk_are_refused_before_one_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.jsonl"
    write_history(path, history(1_000))
    full = shutil.disk_usage(tmp_path)._replace(free=1_000)
    monkeypatch.setattr(shutil, "disk_usage", lambda _: full)
    with pytest.raises(
        EnvironmentFailure,
        match=r"judging in parts needs 0\.2 MB free in .* \(TMPDIR\), and 0\.0 MB is",
    ):
        check_file(path, POLICY, workers=1, part_bytes=10_000)


@dataclass(frozen=True)
class KeysSeen:
    """A ``Beside`` that says, per identity, how many operations and which records it was
    handed with."""

    paths: tuple[str, ...]
    admitted_only = False

    def __call__(
        self, operations: Sequence[Operation], records: list[tuple[int, bytes]]
    ) -> dict[str, tuple[int, list[int]]]:
        seen: dict[str, tuple[int, list[int]]] = {}
        for op in operations:
            count, numbers = seen.get(op.key, (0, []))
            seen[op.key] = (count + 1, numbers)
        for number, line in records:
            key = json.loads(line)["key"]
            count, numbers = seen.get(key, (0, []))
            seen[key] = (count, [*numbers, number])
        return seen


@pytest.mark.parametrize("part_bytes", [3_000, 10_000_000])
def test_records_beside_the_history_go_to_the_part_of_their_identity(
    tmp_path: Path, part_bytes: int
) -> None:
    operations = history(600, keys=12)
    write_history(tmp_path / "history.jsonl", operations)
    records = [[f"user:{n % 15}" for n in range(k, 90, 2)] for k in (0, 1)]  # 3 never in it
    for n, keys in enumerate(records):
        lines = [json.dumps({"key": key}) for key in keys]
        lines.insert(3, "")  # a blank line is counted, as a line number is
        (tmp_path / f"{n}.jsonl").write_text("\n".join(lines) + "\n")
    beside = KeysSeen((str(tmp_path / "0.jsonl"), str(tmp_path / "1.jsonl")))
    verdict, found = judge_file(
        tmp_path / "history.jsonl", POLICY, workers=2, part_bytes=part_bytes, beside=beside
    )
    assert as_json(verdict) == as_json(check(operations, POLICY))
    size = sum(p.stat().st_size for p in tmp_path.glob("*.jsonl"))  # with the records'
    assert len(found) == (1 if size <= part_bytes else part_count(size, part_bytes, workers=2))
    joined: dict[str, tuple[int, list[int]]] = {}
    for part in found:
        assert not set(part) & set(joined)  # an identity is in one part only
        joined |= part
    numbered = [k for keys in records for k in [*keys[:3], "", *keys[3:]]]
    expected = {
        key: (
            sum(op.key == key for op in operations),
            [n for n, other in enumerate(numbered, 1) if other == key],
        )
        for key in set(numbered) - {""}
    }
    assert {key: (c, sorted(ns)) for key, (c, ns) in joined.items()} == expected


@pytest.mark.parametrize(
    ("size", "workers", "expected"),
    [(100, 1, 1), (100, 2, 2), (450, 2, 6), (401, 2, 6), (400, 2, 4), (500, 3, 6), (10**9, 2, 512)],
)
def test_parts_are_enough_to_hold_about_part_bytes_and_as_many_for_each_worker(
    size: int, workers: int, expected: int
) -> None:
    assert part_count(size, 100, workers) == expected


def busy_history(operations: int, seed: int = 1) -> list[Operation]:
    """``history``, with one identity asking for half of it: more than a part alone."""
    made = history(operations, seed=seed)
    return [op._replace(key="user:busy") if n % 2 else op for n, op in enumerate(made)]


def written_busy(folder: Path, *, in_order: bool = True) -> tuple[Path, list[Operation]]:
    """``busy_history(3_000)`` in a file, in order of invoke or with ten of them reversed."""
    operations = busy_history(3_000)
    if not in_order:
        operations[100:110] = reversed(operations[100:110])
    path = folder / "history.jsonl"
    write_history(path, operations)
    return path, operations


@pytest.mark.parametrize("in_order", [True, False])
def test_a_busy_identity_gets_the_verdict_of_the_whole_streamed_or_not(
    tmp_path: Path, in_order: bool
) -> None:
    """In order of invoke it is judged as a stream; out of order, whole, as before."""
    path, operations = written_busy(tmp_path, in_order=in_order)
    with mock.patch.object(partitions, "_with", wraps=partitions._with) as judged_whole:
        verdict = check_file(path, POLICY, workers=1, part_bytes=20_000)
    assert as_json(verdict) == as_json(check(operations, POLICY))
    assert [call.args[2] for call in judged_whole.call_args_list] == (
        [] if in_order else [{"user:busy"}]
    )
    assert {v.kind for v in verdict.violations} == {
        "over-admission",
        "wrongful-rejection",
        "collision",
    }


def test_a_busy_identity_streamed_leaves_unjudged_kinds_unjudged(tmp_path: Path) -> None:
    path, operations = written_busy(tmp_path)
    unjudged = {"wrongful-rejection": "the run could not tell"}
    verdict = check_file(path, POLICY, workers=2, part_bytes=20_000, unjudged=unjudged)
    assert as_json(verdict) == as_json(check(operations, POLICY, unjudged=unjudged))
    assert "wrongful-rejection" not in {v.kind for v in verdict.violations}


@pytest.mark.parametrize(
    ("spec", "in_order", "beside", "why"),
    [
        ("fixed-window:limit=3,window=1", True, False, ""),
        ("fixed-window:limit=3,window=1", False, False, "not in order of invoke"),
        ("leaky-bucket:capacity=3,rate=3", True, False, "is judged on the whole identity"),
        ("fixed-window:limit=3,window=1", True, True, "judged beside the history needs all"),
    ],
)
def test_a_busy_identity_held_whole_is_told_with_why(
    tmp_path: Path, spec: str, in_order: bool, beside: bool, why: str
) -> None:
    path, _ = written_busy(tmp_path, in_order=in_order)
    (tmp_path / "records.jsonl").write_text('{"key": "user:busy"}\n')
    told: list[tuple[str, str]] = []
    judge_file(
        path,
        Policy.parse(spec),
        workers=1,
        part_bytes=20_000,
        held=lambda identity, reason: told.append((identity, reason)),
        beside=KeysSeen((str(tmp_path / "records.jsonl"),)) if beside else None,
    )
    assert [(identity, why in reason) for identity, reason in told] == (
        [("user:busy", True)] if why else []
    )


def test_a_busy_identity_streamed_under_the_sliding_counter_keeps_its_accuracy(
    tmp_path: Path,
) -> None:
    """Its decisions replayed through an exact log as they come: the same disagreement."""
    path, operations = written_busy(tmp_path)
    counter = Policy.parse("sliding-counter:limit=3,window=1")
    with mock.patch.object(partitions, "_with", wraps=partitions._with) as judged_whole:
        verdict = check_file(path, counter, workers=1, part_bytes=20_000)
    whole = check(operations, counter)
    assert as_json(verdict) == as_json(whole)
    assert judged_whole.call_count == 0
    assert whole.metrics["sliding_accuracy"]["wrongly_allowed"] > 0
