"""The interchange file: what is written reads back the same, and every bad line is named."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratelimit_harness.harness.history import (
    HistoryError,
    Operation,
    Outcome,
    format_operation,
    iter_history,
    read_history,
    write_history,
)
from ratelimit_harness.harness.history.errors import InvalidRecord
from ratelimit_harness.harness.history.jsonl import operation_from_record

A, U = Outcome.ALLOWED, Outcome.UNKNOWN
OPERATIONS = [
    Operation("app-1", "user-1", 1700000000.25, 1700000000.2513, A, 1700000000.2507),
    Operation("app-2", "user-1", 1700000000.5, 1700000000.5, Outcome.REJECTED),
    Operation("app-1", 'quote " and \\ and \n é ☃', 1.0, 3.5, Outcome.ERROR),
    Operation("app-3", "user-2", 2.0, None, U),
    Operation("app-3", "user-2", 2.0, 2.75, U, -1.5),
    Operation("app-4", "user-3", 3.0, 3.25, A, None, ("rl:{user-3}", "rl:{user-3}:7")),
    Operation("app-4", "user-3", 4.0, 4.25, A, refund=(4.5, 4.75)),
    Operation("app-4", "user-3", 5.0, 5.25, A, refund=(5.25, None)),
]
GOOD = '{"process": "p", "key": "k", "invoke": 1.0, "complete": 2.0, "outcome": "allowed"}'


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    write_history(path, OPERATIONS)
    assert read_history(path) == OPERATIONS
    assert list(iter_history(path)) == OPERATIONS
    assert len(path.read_text().splitlines()) == len(OPERATIONS)


def test_the_written_line_is_the_documented_format() -> None:
    line = format_operation(OPERATIONS[0])
    assert line == (
        '{"process": "app-1", "key": "user-1", "invoke": 1700000000.25, "complete": '
        '1700000000.2513, "outcome": "allowed", "now": 1700000000.2507}\n'
    )
    assert format_operation(OPERATIONS[3]).endswith(
        '"complete": null, "outcome": "unknown", "now": null}\n'
    )
    assert format_operation(OPERATIONS[5]).endswith(
        '"now": null, "keys": ["rl:{user-3}", "rl:{user-3}:7"]}\n'
    )


text = st.text(max_size=12)
seconds = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)


@st.composite
def operations(draw: st.DrawFn) -> Operation:
    invoke = draw(seconds)
    complete = draw(st.none() | st.floats(min_value=invoke, max_value=invoke + 1e6))
    outcome = U if complete is None else draw(st.sampled_from(Outcome))
    now = draw(st.none() | seconds)
    return Operation(draw(text), draw(text), invoke, complete, outcome, now)


@settings(max_examples=200, deadline=None)
@given(st.lists(operations(), max_size=20))
def test_any_operation_is_one_line_of_json(history: list[Operation]) -> None:
    lines = "".join(map(format_operation, history))
    assert lines.count("\n") == len(history)
    decoded = [json.loads(line) for line in lines.split("\n")[:-1]]
    assert [(r["process"], r["key"], r["invoke"]) for r in decoded] == [
        (op.process, op.key, op.invoke) for op in history
    ]


@settings(max_examples=50, deadline=None)
@given(st.lists(operations(), max_size=20))
def test_any_writable_history_survives_the_file(
    tmp_path_factory: pytest.TempPathFactory, history: list[Operation]
) -> None:
    path = tmp_path_factory.mktemp("h") / "h.jsonl"
    write_history(path, history)
    assert read_history(path) == history


def test_accepts_an_integer_process_integer_times_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(
        "\n"
        '{"process": 3, "key": "k", "invoke": 1, "complete": 2, "outcome": "rejected"}\n'
        "   \n"
        '{"now": null, "outcome": "unknown", "complete": null, "invoke": 5.5, "key": "k", '
        '"process": "p"}'
    )
    history = read_history(path)
    assert history == [
        Operation("3", "k", 1.0, 2.0, Outcome.REJECTED),
        Operation("p", "k", 5.5, None, U),
    ]
    assert all(type(op.invoke) is float for op in history)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"process": "p", "key": ', "invalid JSON: Expecting value (column 25)"),
        ("[1, 2]", "expected a JSON object, got an array"),
        ('"text"', "expected a JSON object, got a string"),
        (GOOD.replace(', "complete": 2.0', ""), "missing field 'complete'"),
        (GOOD.replace('"key"', '"keys"'), "missing field 'key'"),
        (GOOD.replace("}", ', "keys": "rl:{k}"}'), "wrong type: 'keys' must be a list of strings"),
        (GOOD.replace("}", ', "latency": 1.0}'), "unknown field 'latency'"),
        (GOOD.replace('"p"', "true"), "wrong type: 'process' must be a string or an integer"),
        (GOOD.replace('"p"', "1.5"), "wrong type: 'process' must be a string or an integer"),
        (GOOD.replace('"k"', "7"), "wrong type: 'key' must be a string, got a number"),
        (GOOD.replace("1.0", '"1.0"'), "wrong type: 'invoke' must be a number, got a string"),
        (GOOD.replace("2.0", "false"), "wrong type: 'complete' must be a number, got a boolean"),
        (GOOD.replace("}", ', "now": [1]}'), "wrong type: 'now' must be a number, got an array"),
        (GOOD.replace('"allowed"', "1"), "wrong type: 'outcome' must be a string, got a number"),
        (GOOD.replace("allowed", "ALLOWED"), "unknown outcome 'ALLOWED' (expected allowed, "),
        (GOOD.replace("1.0", "NaN"), "non-finite time: 'invoke' is nan"),
        (GOOD.replace("2.0", "Infinity"), "non-finite time: 'complete' is inf"),
        (GOOD.replace("2.0", "1e400"), "non-finite time: 'complete' is inf"),
        (GOOD.replace("2.0", "1" + "0" * 400), "non-finite time: 'complete' is inf"),
        (GOOD.replace("}", ', "now": -Infinity}'), "non-finite time: 'now' is -inf"),
        (GOOD.replace("2.0", "0.5"), "'complete' 0.5 is before 'invoke' 1.0"),
        (GOOD.replace("2.0", "null"), "'complete' is null but the outcome is 'allowed'"),
        (GOOD.replace("}", ', "refund": 3.0}'), "wrong type: 'refund' must be [invoke, complete]"),
        (GOOD.replace("}", ', "refund": [3.0]}'), "wrong type: 'refund' must be [invoke, complete"),
        (
            GOOD.replace("}", ', "refund": [1.5, 3]}'),
            "given back at 1.5, before it completed at 2.0",
        ),
        (
            GOOD.replace("}", ', "refund": [3, 2.5]}'),
            "'refund' completes at 2.5, before its invoke",
        ),
        (GOOD.replace("}", ', "refund": [3, "x"]}'), "wrong type: 'refund[1]' must be a number"),
        (
            GOOD.replace("allowed", "rejected").replace("}", ', "refund": [3, 4]}'),
            "only an allowed request can be given back; this one was 'rejected'",
        ),
    ],
)
def test_each_bad_line_is_one_line_naming_file_and_line(
    tmp_path: Path, line: str, problem: str
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(f"{GOOD}\n\n{GOOD}\n{line}\n{GOOD}\n")
    with pytest.raises(HistoryError) as caught:
        read_history(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:4: {problem}")
    assert "\n" not in message
    assert caught.value.line == 4


def test_iter_history_yields_lazily_and_stops_at_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(f"{GOOD}\nnot json\n")
    operations = iter_history(path)
    with pytest.raises(HistoryError, match=r":2: invalid JSON"):
        list(operations)


def test_an_unreadable_history_names_the_os_reason(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"nope\.jsonl: cannot read: No such file or directory$"):
        read_history(tmp_path / "nope.jsonl")


@pytest.mark.parametrize(
    ("operation", "problem"),
    [
        (Operation("p", "k", 1.0, None, A), "the outcome is 'allowed'"),
        (Operation("p", "k", 2.0, 1.0, A), "'complete' 1.0 is before 'invoke' 2.0"),
        (Operation("p", "k", math.nan, 1.0, A), "nan is not a finite number"),
        (Operation("p", "k", 1.0, 2.0, A, math.inf), "inf is not a finite number"),
        (Operation("p", 3, 1.0, 2.0, A), "process and key must be strings"),  # type: ignore[arg-type]
        (Operation("p", "k", 1.0, 2.0, "maybe"), "'maybe' is not a valid Outcome"),  # type: ignore[arg-type]
        (Operation("p", "k", 1.0, 2.0, A, refund=(1.5, 3.0)), "before it completed at 2.0"),
        (Operation("p", "k", 1.0, 2.0, A, refund=(3.0, math.nan)), "nan is not a finite"),
        (Operation("p", "k", 1.0, 2.0, A, refund=3.0), "cannot unpack"),  # type: ignore[arg-type]
    ],
)
def test_refuses_to_write_what_it_would_not_read(
    tmp_path: Path, operation: Operation, problem: str
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text("before\n")
    with pytest.raises(ValueError, match="cannot write") as caught:
        write_history(path, [OPERATIONS[0], operation])
    assert problem in str(caught.value)
    assert path.read_text() == "before\n"
    assert list(tmp_path.iterdir()) == [path]


def test_writes_plain_values_for_integer_times_and_outcome_strings(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    write_history(path, [Operation("p", "k", 1, 2, "allowed")])  # type: ignore[arg-type]
    assert read_history(path) == [Operation("p", "k", 1.0, 2.0, A)]
    assert '"invoke": 1.0' in path.read_text()


FIELD_VALUES = {
    "process": st.sampled_from(['"app-1"', "7", "true", "null"]),
    "key": st.sampled_from(['"user-1"', '"é\\n"', "3"]),
    "invoke": st.sampled_from(["1.5", "2", "-0.25", "1e400", "NaN", '"1"']),
    "complete": st.sampled_from(["1.5", "3.0", "1.25", "null", "4"]),
    "outcome": st.sampled_from(['"allowed"', '"unknown"', '"rejected"', '"maybe"']),
    "now": st.sampled_from(["1.0", "null", "Infinity"]),
    "keys": st.sampled_from(['["rl:1"]', "[]", "[1]", "null"]),
    "extra": st.just("1"),
}


@st.composite
def lines(draw: st.DrawFn) -> str:
    names = draw(st.lists(st.sampled_from(list(FIELD_VALUES)), unique=True, min_size=4))
    return "{" + ", ".join(f'"{name}": {draw(FIELD_VALUES[name])}' for name in names) + "}"


@settings(max_examples=300, deadline=None)
@given(st.lists(lines(), min_size=1, max_size=6))
def test_the_quick_reading_reads_as_the_definition(
    tmp_path_factory: pytest.TempPathFactory, history: list[str]
) -> None:
    """Each line read alone with json.loads and the documented checks says what the whole
    file's (msgspec) reading must say: the same operations, or an error."""
    path = tmp_path_factory.mktemp("quick") / "h.jsonl"
    path.write_text("".join(line + "\n" for line in history))
    expected: list[Operation] | str
    try:
        expected = [operation_from_record(json.loads(line)) for line in history]
    except InvalidRecord:
        expected = "error"
    try:
        assert read_history(path) == expected
    except HistoryError:
        assert expected == "error"
