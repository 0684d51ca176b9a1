"""The batch reader: line numbers across batches and blank lines, torn tails, and the fast path
agreeing with line-by-line reading where a batch could be misread as a whole."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from ratelimit_harness.harness.history import HistoryError
from ratelimit_harness.harness.history import records as records_module
from ratelimit_harness.harness.history.errors import InvalidRecord
from ratelimit_harness.harness.history.records import collector_paused, read_batches


def scalar_object(record: object) -> dict[str, object]:
    """A converter that keeps the reader's contract: objects of scalars only."""
    if not isinstance(record, dict) or any(isinstance(v, dict | list) for v in record.values()):
        raise InvalidRecord("expected an object of scalars")
    return record


def read_all(path: Path, *, drop_torn_tail: bool = False) -> list[tuple[int, dict[str, object]]]:
    return [
        pair
        for numbers, values in read_batches(path, scalar_object, drop_torn_tail=drop_torn_tail)
        for pair in zip(numbers, values, strict=True)
    ]


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records_module, "BATCH_BYTES", 64)  # a few lines a batch


@pytest.mark.usefixtures("small_batches")
def test_line_numbers_count_blank_lines_across_batches(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    lines = [f'{{"n": {i}}}' if i % 7 else "   " for i in range(1, 200)]
    path.write_text("\n".join(lines) + "\n\n")
    got = read_all(path)
    assert [number for number, _ in got] == [i for i in range(1, 200) if i % 7]
    assert all(record == {"n": number} for number, record in got)


@pytest.mark.usefixtures("small_batches")
def test_the_first_bad_line_is_reported_even_in_a_later_batch(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(f'{{"n": {i}}}\n' for i in range(1, 100)) + '{"n": \n{"n": 1}\n')
    with pytest.raises(HistoryError) as caught:
        read_all(path)
    assert caught.value.line == 100
    assert caught.value.problem.startswith("invalid JSON: Expecting value")


def test_a_last_line_without_newline_is_read_unless_torn_tails_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"n": 1}\n{"n": 2}')
    assert [number for number, _ in read_all(path)] == [1, 2]
    assert [number for number, _ in read_all(path, drop_torn_tail=True)] == [1]
    path.write_text('{"n": 1}\n{"n": 2')
    assert [number for number, _ in read_all(path, drop_torn_tail=True)] == [1]
    with pytest.raises(HistoryError, match=r":2: invalid JSON"):
        read_all(path)


@pytest.mark.parametrize(
    "content",
    [
        # joined with commas, these three lines are three valid objects; line by line, none of
        # the first two is JSON
        '{"a": 1\n"b": 2}\n{"c": 3}, {"d": 4}\n',
        # every line starts with "{" and the batch decodes to three objects, the first holding
        # an array that spans two lines: the converter refuses it, and line by line it is not
        # JSON
        '{"a": [{"x": 1}\n{"y": 2}]}\n{"c": 3}, {"d": 4}\n',
    ],
    ids=["split", "nested"],
)
def test_a_record_over_several_lines_is_refused_though_the_batch_would_parse(
    tmp_path: Path, content: str
) -> None:
    """The reader must say which line is not JSON, not merge lines into records."""
    path = tmp_path / "r.jsonl"
    path.write_text(content)
    with pytest.raises(HistoryError) as caught:
        read_all(path)
    assert caught.value.line == 1
    assert caught.value.problem.startswith("invalid JSON")


def test_lines_not_starting_with_a_brace_are_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('  {"n": 1}\n\t{"n": 2}\r\n')
    assert read_all(path) == [(1, {"n": 1}), (2, {"n": 2})]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"n": "\xff"}\n', "not UTF-8: invalid start byte at byte 8"),
        (b'{"n": ' + b"9" * 5000 + b"}\n", "invalid JSON: Exceeds the limit"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", "invalid JSON: maximum recursion depth"),
        (b'{"n": 1} {"n": 2}\n', "invalid JSON: Extra data (column 10)"),
    ],
)
def test_undecodable_lines_are_named(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"n": 0}\n\n' + content)
    with pytest.raises(HistoryError) as caught:
        read_all(path)
    assert caught.value.line == 3
    assert caught.value.problem.startswith(problem)
    assert "\n" not in str(caught.value)


def test_an_unreadable_file_names_the_os_reason(tmp_path: Path) -> None:
    with pytest.raises(HistoryError) as caught:
        read_all(tmp_path / "missing.jsonl")
    assert (
        str(caught.value) == f"{tmp_path / 'missing.jsonl'}: cannot read: No such file or directory"
    )
    with pytest.raises(HistoryError, match=r": cannot read: Is a directory$"):
        read_all(tmp_path)


def test_collector_paused_restores_the_collector_as_it_was() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
