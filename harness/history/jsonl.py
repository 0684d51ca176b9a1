"""The history interchange file: JSON Lines, one operation a line, as the checkers read it.

    {"process": "app-3", "key": "user-1", "invoke": 1700000000.25, "complete": 1700000000.2513, "outcome": "allowed", "now": 1700000000.2507}

``process`` and ``key`` are strings (a process given as an integer is read as its decimal
string); ``invoke``, ``complete`` and the optional ``now`` are seconds; ``complete`` is null for
an operation that never completed, whose outcome must then be ``unknown``, and is never before
``invoke``. The optional ``keys`` lists the Redis keys the operation touched, where the driver
saw them. The optional ``cost``, a whole number from 1 (the default), is how many units of the
budget the request asked for. The optional ``refund``, on an allowed operation only, says it was
given back: ``[invoke, complete]`` of the give-back, ``complete`` null when it never answered.
No other field is allowed. Blank lines are skipped.
"""  # noqa: E501

from __future__ import annotations

import functools
import json
import math
import operator
import os
import typing
from collections.abc import Iterable, Iterator, Sequence
from typing import Annotated, Any

import msgspec

from ratelimit_harness.harness.history import fields
from ratelimit_harness.harness.history.errors import InvalidRecord
from ratelimit_harness.harness.history.files import replacing
from ratelimit_harness.harness.history.operation import Operation, Outcome
from ratelimit_harness.harness.history.records import (
    collector_paused,
    convert_lines,
    read_batches,
)

_REQUIRED = ("process", "key", "invoke", "complete", "outcome")
_QUOTED = {outcome: json.dumps(outcome.value) for outcome in Outcome}
_quoted = functools.lru_cache(maxsize=1 << 16)(json.dumps)  # identities and processes recur
_INF = math.inf
_UNKNOWN = Outcome.UNKNOWN
_INVOKE, _COMPLETE, _REFUND = (operator.itemgetter(i) for i in (2, 3, 8))


def read_history(path: str | os.PathLike[str]) -> list[Operation]:
    """Every operation of the history file ``path``, in file order. Raises HistoryError."""
    with collector_paused():
        batches = read_batches(path, operation_from_record, fast=_usual_lines)
        return [op for _, batch in batches for op in batch]


def iter_history(path: str | os.PathLike[str]) -> Iterator[Operation]:
    """The operations of ``path`` one at a time, in file order. Raises HistoryError at the first
    bad line, having yielded some (not necessarily all) of the operations before it."""
    for _, batch in read_batches(path, operation_from_record, fast=_usual_lines):
        yield from batch


def operations_of_lines(
    path: str | os.PathLike[str], numbers: Sequence[int], lines: list[bytes]
) -> list[Operation]:
    """The operations of ``lines``, non-blank lines of ``path`` numbered ``numbers`` (for the
    error a bad one raises: HistoryError), as ``read_history`` reads them."""
    return convert_lines(path, numbers, lines, operation_from_record, fast=_usual_lines)


# a line as nearly every line is: Operation's fields, typed, for msgspec to decode straight from
# the bytes (its floats are always finite: a number out of range is an error; a cost below 1 is)
_TYPES = typing.get_type_hints(Operation) | {"cost": Annotated[int, msgspec.Meta(ge=1)]}
_Line = msgspec.defstruct(
    "_Line",
    [
        (name, kind, Operation._field_defaults[name])
        if name in Operation._field_defaults
        else (name, kind)
        for name, kind in _TYPES.items()
    ],
    forbid_unknown_fields=True,
    gc=False,
)
_decode_line = msgspec.json.Decoder(_Line).decode
_operation_of = functools.partial(tuple.__new__, Operation)


def _usual_lines(lines: list[bytes]) -> list[Operation] | None:
    """The operations of ``lines`` if every line is a ``_Line`` whose times are in order (four
    times faster than decoding to dicts and checking those), else None."""
    try:
        records = list(map(_decode_line, lines))
    except msgspec.MsgspecError:
        return None
    # an Operation is a tuple: built from the record's fields without a Python-level call
    operations = list(map(_operation_of, map(msgspec.structs.astuple, records)))
    return operations if _in_order(operations) and _refunds_sound(operations) else None


def _in_order(operations: list[Operation]) -> bool:
    """Whether each operation completed no earlier than it was invoked, or never completed and
    is ``unknown``. Compared in C where every one completed (nearly every batch)."""
    completes = list(map(_COMPLETE, operations))
    if None not in completes:
        return all(map(operator.le, map(_INVOKE, operations), completes))
    return all(
        op.invoke <= op.complete if op.complete is not None else op.outcome is _UNKNOWN
        for op in operations
    )


def _refunds_sound(operations: list[Operation]) -> bool:
    return not any(map(_REFUND, operations)) or not any(map(_refund_problem, operations))


def _refund_problem(op: Operation) -> str | None:
    return None if op.refund is None else fields.refund_problem(op.refund, op.complete, op.outcome)


def write_history(path: str | os.PathLike[str], operations: Iterable[Operation]) -> None:
    """Write ``operations`` to ``path``, one line each, replacing the file only once all are
    written. Raises ValueError for an operation ``read_history`` would reject (the file is then
    left as it was)."""
    with replacing(path) as file:
        file.writelines(format_operation(op).encode() for op in operations)


def format_operation(operation: Operation) -> str:
    """One line of the interchange file, newline included. Raises ValueError for an operation
    ``read_history`` would reject."""
    values = (
        operation.process,
        operation.key,
        operation.invoke,
        operation.complete,
        operation.outcome,
        operation.now,
    )
    process, key, invoke, complete, outcome, now = (
        values if _usual(values) else _writable(operation)
    )
    touched = f', "keys": {json.dumps(list(operation.keys))}' if operation.keys else ""
    if operation.cost != 1:
        touched += f', "cost": {_cost(operation.cost)}'
    if operation.refund is not None:
        touched += f', "refund": {_refund(operation, operation.refund)}'
    return (
        f'{{"process": {_quoted(process)}, "key": {_quoted(key)}, "invoke": {invoke!r}, '
        f'"complete": {"null" if complete is None else repr(complete)}, '
        f'"outcome": {_QUOTED[outcome]}, "now": {"null" if now is None else repr(now)}'
        f"{touched}}}\n"
    )


def operation_from_record(record: object) -> Operation:
    """The Operation one decoded line holds. Raises InvalidRecord saying what is wrong."""
    if type(record) is dict:
        try:
            process = record["process"]
            key = record["key"]
            invoke = record["invoke"]
            complete = record["complete"]
            outcome = fields.OUTCOMES[record["outcome"]]
        except (KeyError, TypeError):  # a field missing; an outcome unknown, or not a string
            pass
        else:
            values = (process, key, invoke, complete, outcome, record.get("now"))
            if len(record) == 5 + ("now" in record) and _usual(values):
                return Operation(*values)
    return _checked(record)


def _usual(values: tuple[Any, ...]) -> bool:
    """Whether ``(process, key, invoke, complete, outcome, now)`` are valid as they are: strings,
    finite floats in order, an Outcome. Nearly every operation's are."""
    process, key, invoke, complete, outcome, now = values
    return (
        type(process) is str
        and type(key) is str
        and type(invoke) is float
        and type(outcome) is Outcome
        and (now is None or (type(now) is float and -_INF < now < _INF))
        and (
            (type(complete) is float and -_INF < invoke <= complete < _INF)
            or (complete is None and outcome is _UNKNOWN and -_INF < invoke < _INF)
        )
    )


def _checked(record: object) -> Operation:
    """The operation of a record that is not ``_usual``, or InvalidRecord saying why not."""
    checked = fields.fields_of(record, _REQUIRED, ("now", "keys", "cost", "refund"))
    process = checked["process"]
    if type(process) is int:
        process = str(process)
    elif type(process) is not str:
        got = fields.json_type(process)
        raise InvalidRecord(f"wrong type: 'process' must be a string or an integer, got {got}")
    key = fields.string(checked, "key")
    invoke = fields.seconds(checked, "invoke")
    complete = fields.seconds_or_null(checked, "complete")
    outcome = fields.outcome(checked)
    now = fields.seconds_or_null(checked, "now")
    touched = checked.get("keys", [])
    if type(touched) is not list or not all(type(k) is str for k in touched):
        raise InvalidRecord("wrong type: 'keys' must be a list of strings")
    cost = fields.integer(checked, "cost") if "cost" in checked else 1
    if cost < 1:
        raise InvalidRecord(f"'cost' must be 1 or more, got {cost}")
    problem = fields.timing_problem(invoke, complete, outcome)
    if problem:
        raise InvalidRecord(problem)
    refund = fields.refund(checked) if checked.get("refund") is not None else None
    problem = refund and fields.refund_problem(refund, complete, outcome)
    if problem:
        raise InvalidRecord(problem)
    return Operation(process, key, invoke, complete, outcome, now, tuple(touched), cost, refund)


def _writable(
    operation: Operation,
) -> tuple[str, str, float, float | None, Outcome, float | None]:
    """The fields of an operation that is not ``_usual`` as plain str, float and Outcome, or
    ValueError saying why it cannot be written."""
    try:
        if not isinstance(operation.process, str) or not isinstance(operation.key, str):
            raise ValueError("process and key must be strings")
        invoke = _finite(operation.invoke)
        complete = None if operation.complete is None else _finite(operation.complete)
        now = None if operation.now is None else _finite(operation.now)
        outcome = Outcome(operation.outcome)
        problem = fields.timing_problem(invoke, complete, outcome)
        if problem:
            raise ValueError(problem)
    except ValueError as error:
        raise ValueError(f"cannot write {operation!r}: {error}") from None
    return str(operation.process), str(operation.key), invoke, complete, outcome, now


def _cost(value: object) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"cannot write cost {value!r}: it must be a whole number from 1")
    return value


def _refund(operation: Operation, refund: tuple[float, float | None]) -> str:
    """The ``refund`` field's JSON, or ValueError saying why it cannot be written (a caller may
    have put anything there: a pair of numbers is checked, not assumed)."""
    given: tuple[float, float | None] = (0.0, None)
    try:
        invoke, complete = refund
        given = (_finite(invoke), None if complete is None else _finite(complete))
        problem = _refund_problem(operation._replace(refund=given))
    except (TypeError, ValueError) as error:
        problem = str(error)
    if problem:
        raise ValueError(f"cannot write the refund of {operation!r}: {problem}")
    return json.dumps(list(given))


def _finite(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise ValueError(f"{value!r} is not a finite number of seconds")
