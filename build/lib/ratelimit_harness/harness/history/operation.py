"""One operation of a history, as Jepsen records one: who, on which key, when it was invoked and
when it completed (one clock shared by every process), and how it ended."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class Outcome(StrEnum):
    ALLOWED = "allowed"
    REJECTED = "rejected"
    ERROR = "error"  # failed, known not to have counted
    UNKNOWN = "unknown"  # timed out, connection dropped, process died: may or may not have counted


class Operation(NamedTuple):
    """``complete`` is None when the operation never completed (its outcome is then unknown).
    ``now`` is the instant the limiter itself believed it was, when it said. ``keys`` are the
    Redis keys the operation touched, where the driver saw them (for the collision check).
    ``cost`` is how many units of the budget the request asks for (a weighted request: tokens
    for an LLM call, bytes, a batch); 1 for most. ``refund`` is set on an admitted request that
    was given back (its work failed downstream, say): when the give-back was invoked, and when
    it completed (None: it never answered, so it may or may not have taken effect).

    A named tuple: immutable, and cheap to build by the million."""

    process: str
    key: str
    invoke: float
    complete: float | None
    outcome: Outcome
    now: float | None = None
    keys: tuple[str, ...] = ()
    cost: int = 1
    refund: tuple[float, float | None] | None = None

    @property
    def latency(self) -> float | None:
        return None if self.complete is None else self.complete - self.invoke
