"""Checking the fields of one decoded JSON record; every failure is an InvalidRecord whose
message names the field and what is wrong with it."""

from __future__ import annotations

import math
from collections.abc import Collection

from ratelimit_harness.harness.history.errors import InvalidRecord
from ratelimit_harness.harness.history.operation import Outcome

OUTCOMES = {outcome.value: outcome for outcome in Outcome}


def json_type(value: object) -> str:
    """The JSON name of a decoded value, with its article: ``a string``, ``an array``..."""
    if value is None:
        return "null"
    names = {bool: "a boolean", str: "a string", list: "an array", dict: "an object"}
    return names.get(type(value), "a number")


def fields_of(
    record: object, required: Collection[str], optional: Collection[str] = ()
) -> dict[str, object]:
    """``record`` as an object that has every ``required`` field and no field not named."""
    if not isinstance(record, dict):
        raise InvalidRecord(f"expected a JSON object, got {json_type(record)}")
    for name in record:
        if name not in required and name not in optional:
            raise InvalidRecord(f"unknown field {name[:40]!r}")
    for name in required:
        if name not in record:
            raise InvalidRecord(f"missing field {name!r}")
    return record


def string(record: dict[str, object], name: str) -> str:
    value = record[name]
    if type(value) is not str:
        raise InvalidRecord(f"wrong type: {name!r} must be a string, got {json_type(value)}")
    return value


def integer(record: dict[str, object], name: str) -> int:
    value = record[name]
    if type(value) is not int:
        raise InvalidRecord(f"wrong type: {name!r} must be an integer, got {json_type(value)}")
    return value


def seconds(record: dict[str, object], name: str) -> float:
    """A finite number of seconds (a JSON integer is read as a float)."""
    value = record[name]
    if type(value) not in (float, int):
        raise InvalidRecord(f"wrong type: {name!r} must be a number, got {json_type(value)}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an integer beyond the range of a float
        number = math.inf
    if not math.isfinite(number):
        raise InvalidRecord(f"non-finite time: {name!r} is {number!r}")
    return number


def seconds_or_null(record: dict[str, object], name: str) -> float | None:
    """As ``seconds``, but null (or absent) is None."""
    return None if record.get(name) is None else seconds(record, name)


def outcome(record: dict[str, object], name: str = "outcome") -> Outcome:
    value = record[name]
    if type(value) is not str:
        raise InvalidRecord(f"wrong type: {name!r} must be a string, got {json_type(value)}")
    try:
        return OUTCOMES[value]
    except KeyError:
        expected = ", ".join(OUTCOMES)
        raise InvalidRecord(f"unknown outcome {value[:40]!r} (expected {expected})") from None


def timing_problem(invoke: float, complete: float | None, result: Outcome) -> str | None:
    """What is wrong with these times and outcome together, or None. Both times are finite."""
    if complete is None:
        if result is not Outcome.UNKNOWN:
            return (
                f"'complete' is null but the outcome is {result.value!r}: an operation that "
                "never completed is unknown"
            )
    elif complete < invoke:
        return f"'complete' {complete!r} is before 'invoke' {invoke!r}"
    return None


def refund(record: dict[str, object], name: str = "refund") -> tuple[float, float | None]:
    """A give-back's ``[invoke, complete]``: finite seconds, ``complete`` null (in order:
    ``refund_problem``)."""
    value = record[name]
    if type(value) is not list or len(value) != 2:
        got = json_type(value)
        raise InvalidRecord(f"wrong type: {name!r} must be [invoke, complete], got {got}")
    pair = {f"{name}[0]": value[0], f"{name}[1]": value[1]}
    return seconds(pair, f"{name}[0]"), seconds_or_null(pair, f"{name}[1]")


def refund_problem(
    refunded: tuple[float, float | None], complete: float | None, result: Outcome
) -> str | None:
    """What is wrong with giving back an operation that ended so, or None."""
    invoke, answered = refunded
    if answered is not None and answered < invoke:
        return f"'refund' completes at {answered!r}, before its invoke {invoke!r}"
    if result is not Outcome.ALLOWED or complete is None:
        return f"only an allowed request can be given back; this one was {result.value!r}"
    if refunded[0] < complete:
        return f"given back at {refunded[0]!r}, before it completed at {complete!r}"
    return None
