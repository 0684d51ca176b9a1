"""Merging journals: invokes paired with completions, in-flight operations kept as unknown,
a torn last line ignored, anything else wrong named by file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratelimit_harness.harness.history import (
    HistoryError,
    Operation,
    Outcome,
    Recorder,
    merge_into_history,
    merge_journals,
    read_history,
)
from tests.clocks import START, ManualClock

A, R, E, U = Outcome.ALLOWED, Outcome.REJECTED, Outcome.ERROR, Outcome.UNKNOWN


@pytest.fixture
def three_journals(tmp_path: Path) -> list[Path]:
    """Three processes, one clock, interleaved; app-2 is left with an operation in flight."""
    clock = ManualClock()
    paths = [tmp_path / f"app-{n}.jsonl" for n in (1, 2, 3)]
    one, two, three = (Recorder(path, path.stem, clock) for path in paths)
    a = one.invoke("user-1")
    clock.advance(1)
    b = two.invoke("user-1")
    clock.advance(1)
    c = three.invoke("user-2")
    clock.advance(1)
    two.complete(b, R, now=START + 1.5)
    clock.advance(1)
    d = two.invoke("user-2")  # never completes
    clock.advance(1)
    one.complete(a, A)
    three.complete(c, E)
    clock.advance(1)
    e = one.invoke("user-1")
    clock.advance(1)
    one.complete(e, U)  # timed out: completed, outcome unknown
    assert d == 1
    for recorder in (one, two, three):
        recorder.close()
    return paths


def test_merges_three_journals_in_invoke_order(three_journals: list[Path]) -> None:
    assert merge_journals(three_journals) == [
        Operation("app-1", "user-1", START, START + 5, A),
        Operation("app-2", "user-1", START + 1, START + 3, R, START + 1.5),
        Operation("app-3", "user-2", START + 2, START + 5, E),
        Operation("app-2", "user-2", START + 4, None, U),
        Operation("app-1", "user-1", START + 6, START + 7, U),
    ]


def test_merge_into_history_writes_what_read_history_reads(
    three_journals: list[Path], tmp_path: Path
) -> None:
    merged = merge_into_history(three_journals, tmp_path / "history.jsonl")
    assert read_history(tmp_path / "history.jsonl") == merge_journals(three_journals)
    assert (merged.count, merged.first, merged.last) == (5, START, START + 7)
    assert merged.unfinished == [START + 4]  # app-2's operation in flight


@pytest.mark.parametrize("run_ops", [1, 2, 3])
def test_merge_into_history_sorts_runs_on_disk_as_in_memory(
    three_journals: list[Path], tmp_path: Path, run_ops: int
) -> None:
    merge_into_history(three_journals, tmp_path / "history.jsonl", run_ops=run_ops)
    assert read_history(tmp_path / "history.jsonl") == merge_journals(three_journals)
    assert not list(tmp_path.glob("*.partial"))


def test_ties_keep_the_order_of_the_journals(tmp_path: Path) -> None:
    paths = [tmp_path / f"{name}.jsonl" for name in ("b", "a", "c")]
    for path in paths:
        with Recorder(path, path.stem, ManualClock()) as recorder:
            recorder.invoke("k")
            recorder.invoke("k2")
    merged = merge_journals(paths)
    assert [(op.process, op.key) for op in merged] == [
        (p, k) for p in ("b", "a", "c") for k in ("k", "k2")
    ]


def test_an_empty_journal_has_no_operations(tmp_path: Path) -> None:
    (tmp_path / "j.jsonl").write_text("")
    assert merge_journals([tmp_path / "j.jsonl"]) == []


def two_completed(path: Path) -> list[Operation]:
    clock = ManualClock()
    with Recorder(path, "app-1", clock) as recorder:
        for key in ("a", "b"):
            token = recorder.invoke(key)
            clock.advance(1)
            recorder.complete(token, A)
    return merge_journals([path])


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    before = two_completed(path)
    with open(path, "a") as journal:
        journal.write('{"event": "invoke", "op": 2, "proc')  # the write a kill cut short
    assert merge_journals([path]) == before


def test_a_torn_completion_leaves_its_operation_unknown(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    two_completed(path)
    content = path.read_bytes()
    path.write_bytes(content[:-12])  # the last completion, cut short
    assert [(op.key, op.complete is None, op.outcome) for op in merge_journals([path])] == [
        ("a", False, A),
        ("b", True, U),
    ]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"event": "inv', "invalid JSON"),
        (
            '{"event": "start", "op": 9}',
            "unknown event 'start' (expected invoke, complete, refund or refunded)",
        ),
        ('{"op": 9}', "missing field 'event'"),
        ('{"event": "invoke", "op": 9, "process": "p", "key": "k"}', "missing field 'time'"),
        (
            '{"event": "invoke", "op": "9", "process": "p", "key": "k", "time": 1.0}',
            "wrong type: 'op' must be an integer",
        ),
        (
            '{"event": "complete", "op": 9, "time": 1.0, "outcome": "fine"}',
            "unknown outcome 'fine'",
        ),
        (
            '{"event": "invoke", "op": 0, "process": "p", "key": "k", "time": 1.0}',
            "operation 0 invoked again (first on line 1)",
        ),
        (
            '{"event": "complete", "op": 9, "time": 1.0, "outcome": "allowed"}',
            "operation 9 completes but was not invoked before",
        ),
        (
            '{"event": "complete", "op": 0, "time": 1e10, "outcome": "allowed"}',
            "operation 0 completed again (first on line 2)",
        ),
    ],
)
def test_a_bad_line_before_the_last_is_named(tmp_path: Path, line: str, problem: str) -> None:
    path = tmp_path / "j.jsonl"
    two_completed(path)
    content = path.read_text().splitlines(keepends=True)
    path.write_text("".join([*content[:2], "\n", line, "\n", *content[2:]]))
    with pytest.raises(HistoryError) as caught:
        merge_journals([path])
    assert str(caught.value).startswith(f"{path}:4: {problem}")
    assert "\n" not in str(caught.value)


def test_a_bad_last_line_with_its_newline_is_not_torn(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    two_completed(path)
    with open(path, "a") as journal:
        journal.write('{"event": "invoke", "op": 2, "proc\n')
    with pytest.raises(HistoryError, match=r":5: invalid JSON"):
        merge_journals([path])


def test_a_completion_before_its_invoke_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    clock = ManualClock()
    with Recorder(path, "app-1", clock) as recorder:
        token = recorder.invoke("k")
        clock.advance(-0.5)  # the clock stepped back
        recorder.complete(token, A)
    with pytest.raises(HistoryError, match=r":2: operation 0 completes at .* before its invoke"):
        merge_journals([path])


def test_an_unreadable_journal_names_the_os_reason(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"gone\.jsonl: cannot read: No such file"):
        merge_journals([tmp_path / "gone.jsonl"])


def test_a_requests_cost_goes_from_its_journal_into_the_history(tmp_path: Path) -> None:
    path = tmp_path / "app-0.jsonl"
    with Recorder(path, "app-0", clock=iter([1.0, 1.5, 2.0]).__next__) as recorder:
        recorder.complete(recorder.invoke("user:1", 3), Outcome.ALLOWED)
        recorder.invoke("user:1")  # in flight when the process ended
    assert '"cost": 3' in path.read_text()
    assert [op.cost for op in merge_journals([path])] == [3, 1]
    with (
        Recorder(tmp_path / "bad.jsonl", "app-0") as recorder,
        pytest.raises(ValueError, match="cost"),
    ):
        recorder.invoke("user:1", 0)


def test_a_give_back_goes_from_its_journal_into_the_history(tmp_path: Path) -> None:
    path = tmp_path / "app-0.jsonl"
    times = iter([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5])
    with Recorder(path, "app-0", clock=times.__next__) as recorder:
        answered = recorder.invoke("user:1")
        recorder.complete(answered, Outcome.ALLOWED)
        recorder.give_back(answered)
        recorder.given_back(answered)
        unanswered = recorder.invoke("user:1")
        recorder.complete(unanswered, Outcome.ALLOWED)
        recorder.give_back(unanswered)  # the process died during the give-back
        with pytest.raises(ValueError, match="has not completed"):
            recorder.give_back(recorder.invoke("user:1"))
    assert [op.refund for op in merge_journals([path])] == [(2.0, 2.5), (4.0, None), None]


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (["refund"], "operation 0 is given back but did not complete allowed before"),
        (["complete", "refunded"], "give-back answers but was not begun"),
        (["complete", "refund", "refund"], "operation 0 given back again"),
        (["complete", "refund", "refunded", "refunded"], "or answered before"),
    ],
)
def test_a_give_back_out_of_turn_is_named(tmp_path: Path, lines: list[str], problem: str) -> None:
    path = tmp_path / "app-0.jsonl"
    records = ['{"event": "invoke", "op": 0, "process": "p", "key": "k", "time": 1.0}']
    for n, event in enumerate(lines):
        if event == "complete":
            records.append('{"event": "complete", "op": 0, "time": 2.0, "outcome": "allowed"}')
        else:
            records.append(f'{{"event": "{event}", "op": 0, "time": {3.0 + n}}}')
    path.write_text("\n".join(records) + "\n")
    with pytest.raises(HistoryError, match=problem):
        merge_journals([path])
