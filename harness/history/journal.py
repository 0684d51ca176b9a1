"""A process's journal: what one Recorder appends as it goes, one JSON object a line.

    {"event": "invoke", "op": 7, "process": "app-3", "key": "user-1", "time": 1700000000.25}
    {"event": "complete", "op": 7, "time": 1700000000.2513, "outcome": "allowed", "now": null}

``op`` numbers the operations of one journal. The invoke record is written before the operation
runs, the complete record once it has ended; ``time`` is seconds on the clock every process
shares, ``now`` the instant the limiter believed it was (or null). An allowed request given
back (``Operation.refund``) gets two more, written the same way around the give-back:

    {"event": "refund", "op": 7, "time": 1700000000.26}
    {"event": "refunded", "op": 7, "time": 1700000000.2604}
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Annotated, Any, NamedTuple

import msgspec

from ratelimit_harness.harness.history import fields
from ratelimit_harness.harness.history.errors import InvalidRecord
from ratelimit_harness.harness.history.operation import Outcome

_INVOKE_FIELDS = ("event", "op", "process", "key", "time")
_COMPLETE_FIELDS = ("event", "op", "time", "outcome")
_INF = math.inf


class Invoked(NamedTuple):
    op: int
    process: str
    key: str
    time: float
    cost: int = 1  # what the request costs, in units of the budget (``Operation.cost``)


class Completed(NamedTuple):
    op: int
    time: float
    outcome: Outcome
    now: float | None


class GivenBack(NamedTuple):
    """A give-back of operation ``op``: ``event`` is ``refund`` (about to run) or ``refunded``
    (it answered)."""

    op: int
    time: float
    event: str

    def onto(self, refund: tuple[float, float | None] | None) -> tuple[float, float | None]:
        """The give-back's ``[invoke, complete]`` once this event is added to ``refund`` (what
        the events before it made; None before any): begun now, or answered now."""
        begun = self.time if refund is None else refund[0]
        return (begun, None if self.event == "refund" else self.time)


GIVE_BACK_EVENTS = ("refund", "refunded")


def invoke_line(op: int, process_json: str, key_json: str, time: float, cost: int = 1) -> bytes:
    """The invoke record; ``process_json`` and ``key_json`` are the strings already in JSON
    (``json.dumps``), ``time`` a finite float, ``cost`` a whole number from 1 (written only when
    it is not 1)."""
    costs = f', "cost": {cost}' if cost != 1 else ""
    return (
        f'{{"event": "invoke", "op": {op}, "process": {process_json}, "key": {key_json}, '
        f'"time": {time!r}{costs}}}\n'
    ).encode()


def complete_line(op: int, time: float, outcome_json: str, now: float | None) -> bytes:
    """The complete record; ``outcome_json`` is the outcome already in JSON, ``time`` and
    ``now`` finite floats (``now`` may be None)."""
    return (
        f'{{"event": "complete", "op": {op}, "time": {time!r}, "outcome": {outcome_json}, '
        f'"now": {"null" if now is None else repr(now)}}}\n'
    ).encode()


def give_back_line(op: int, time: float, event: str) -> bytes:
    """A ``refund`` or ``refunded`` record (``time`` a finite float)."""
    return f'{{"event": "{event}", "op": {op}, "time": {time!r}}}\n'.encode()


def event_from_record(record: object) -> Invoked | Completed | GivenBack:
    """The event one decoded journal line holds. Raises InvalidRecord saying what is wrong."""
    if type(record) is dict:  # the usual records, valid as they are; the rest go to _checked
        event, op, time = record.get("event"), record.get("op"), record.get("time")
        if type(op) is int and type(time) is float and -_INF < time < _INF:
            if event == "invoke" and len(record) == 5:
                process, key = record.get("process"), record.get("key")
                if type(process) is str and type(key) is str:
                    return Invoked(op, process, key, time)
            elif event == "complete" and len(record) == 4 + ("now" in record):
                outcome, now = record.get("outcome"), record.get("now")
                if (
                    type(outcome) is str
                    and outcome in fields.OUTCOMES
                    and (now is None or (type(now) is float and -_INF < now < _INF))
                ):
                    return Completed(op, time, fields.OUTCOMES[outcome], now)
    return _checked(record)


def _checked(record: object) -> Invoked | Completed | GivenBack:
    """The event of a record that is not one of the usual, or InvalidRecord saying why not."""
    event = record.get("event") if isinstance(record, dict) else None
    if event == "invoke":
        checked = fields.fields_of(record, _INVOKE_FIELDS, ("cost",))
        cost = fields.integer(checked, "cost") if "cost" in checked else 1
        if cost < 1:
            raise InvalidRecord(f"'cost' must be 1 or more, got {cost}")
        return Invoked(
            fields.integer(checked, "op"),
            fields.string(checked, "process"),
            fields.string(checked, "key"),
            fields.seconds(checked, "time"),
            cost,
        )
    if event == "complete":
        checked = fields.fields_of(record, _COMPLETE_FIELDS, ("now",))
        return Completed(
            fields.integer(checked, "op"),
            fields.seconds(checked, "time"),
            fields.outcome(checked),
            fields.seconds_or_null(checked, "now"),
        )
    if event in GIVE_BACK_EVENTS:
        checked = fields.fields_of(record, ("event", "op", "time"))
        return GivenBack(fields.integer(checked, "op"), fields.seconds(checked, "time"), event)
    optional = (*_INVOKE_FIELDS, *_COMPLETE_FIELDS, "now", "cost")
    checked = fields.fields_of(record, ("event",), optional)
    expected = "invoke, complete, refund or refunded"
    raise InvalidRecord(f"unknown event {checked['event']!r} (expected {expected})")


# the records as nearly every line is, for msgspec to decode straight from the bytes (a number
# out of range is an error, so every float is finite; a cost below 1 is an error)
class _InvokeLine(msgspec.Struct, tag_field="event", tag="invoke", forbid_unknown_fields=True):
    op: int
    process: str
    key: str
    time: float
    cost: Annotated[int, msgspec.Meta(ge=1)] = 1


class _CompleteLine(msgspec.Struct, tag_field="event", tag="complete", forbid_unknown_fields=True):
    op: int
    time: float
    outcome: Outcome
    now: float | None = None


class _RefundLine(msgspec.Struct, tag_field="event", tag="refund", forbid_unknown_fields=True):
    op: int
    time: float


class _RefundedLine(msgspec.Struct, tag_field="event", tag="refunded", forbid_unknown_fields=True):
    op: int
    time: float


_decode_event = msgspec.json.Decoder(
    _InvokeLine | _CompleteLine | _RefundLine | _RefundedLine
).decode
_AS_EVENT: dict[type, Callable[[tuple[Any, ...]], Invoked | Completed | GivenBack]] = {
    _InvokeLine: functools.partial(tuple.__new__, Invoked),
    _CompleteLine: functools.partial(tuple.__new__, Completed),
    _RefundLine: lambda fields: GivenBack(fields[0], fields[1], "refund"),
    _RefundedLine: lambda fields: GivenBack(fields[0], fields[1], "refunded"),
}


def usual_events(lines: list[bytes]) -> list[Invoked | Completed | GivenBack] | None:
    """The events of ``lines`` if every line is a usual record (several times faster than
    ``event_from_record`` of each decoded line), else None: read them that way, which says what
    is wrong."""
    try:
        records = list(map(_decode_event, lines))
    except msgspec.MsgspecError:
        return None
    astuple = msgspec.structs.astuple
    return [_AS_EVENT[type(record)](astuple(record)) for record in records]
