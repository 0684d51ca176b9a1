"""HistoryError: one line naming the file and the line, and its parts kept apart."""

from __future__ import annotations

import pickle

from ratelimit_harness.harness.history import HistoryError


def test_message_names_the_file_and_the_line() -> None:
    error = HistoryError("missing field 'key'", "runs/h.jsonl", 7)
    assert str(error) == "runs/h.jsonl:7: missing field 'key'"
    assert (error.path, error.line, error.problem) == ("runs/h.jsonl", 7, "missing field 'key'")
    assert isinstance(error, ValueError)


def test_a_whole_file_problem_has_no_line_number() -> None:
    assert str(HistoryError("cannot read: No such file or directory", "h.jsonl")) == (
        "h.jsonl: cannot read: No such file or directory"
    )


def test_the_message_stays_on_one_line_whatever_it_quotes() -> None:
    error = HistoryError("bad\nthing\r", "odd\nname.jsonl", 1)
    assert "\n" not in str(error)
    assert "\r" not in str(error)
    assert error.problem == "bad\nthing\r"


def test_survives_pickling_with_its_parts() -> None:
    error = pickle.loads(pickle.dumps(HistoryError("wrong type", "h.jsonl", 3)))
    assert isinstance(error, HistoryError)
    assert (str(error), error.path, error.line) == ("h.jsonl:3: wrong type", "h.jsonl", 3)
